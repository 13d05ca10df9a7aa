// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma network glue: the per-namespace UDP 4791 sockets, routes, and the
 * transmit path (packet buffers, UDP and IP headers, and where a packet
 * goes: down the IP stack, or to local delivery when it would only come
 * back to this host).
 *
 * Kernel sockets hold no reference on their namespace, and an srdma device
 * may outlive the namespace of its netdev by a little (its unregistration is
 * queued). So the sockets of a namespace are released from our pernet exit
 * hook, and a socket set left behind only keeps its (NULL) pointers until
 * the last device drops it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/module.h>
#include <linux/sched/isolation.h>
#include <net/udp_tunnel.h>
#include <net/netns/generic.h>
#include <net/ip.h>
#include <net/ip6_route.h>
#include <net/ipv6.h>
#include <net/ipv6_stubs.h>
#include <net/route.h>

#include "srdma.h"

/* Any non-zero type makes UDP hand our datagrams to encap_rcv. */
#define SRDMA_UDP_ENCAP_TYPE	1

/*
 * Guards srdma_socksets and the sk4/sk6/net fields of every set on it.
 * sk6 is also read under RCU by route lookups (packets, timers), so it is
 * unpublished and a grace period waited out before its socket is released.
 */
static DEFINE_MUTEX(srdma_net_mutex);
static LIST_HEAD(srdma_socksets);

static struct socket *srdma_udp_open(struct net *net, struct srdma_sockset *ss,
				     bool ipv6, int *errp)
{
	struct udp_tunnel_sock_cfg tcfg = {};
	struct udp_port_cfg ucfg = {};
	struct socket *sock;
	int err;

	if (ipv6) {
		ucfg.family = AF_INET6;
		ucfg.ipv6_v6only = 1;
		ucfg.local_ip6 = in6addr_any;
	} else {
		ucfg.family = AF_INET;
		ucfg.local_ip.s_addr = htonl(INADDR_ANY);
	}
	ucfg.local_udp_port = htons(SRDMA_UDP_PORT);

	err = udp_sock_create(net, &ucfg, &sock);
	if (err) {
		*errp = err;
		return NULL;
	}

	tcfg.sk_user_data = ss;
	tcfg.encap_type = SRDMA_UDP_ENCAP_TYPE;
	tcfg.encap_rcv = srdma_udp_encap_recv;
	setup_udp_tunnel_sock(net, sock, &tcfg);
	return sock;
}

static void srdma_sockset_close(struct srdma_sockset *ss)
{
	struct socket *sk6 = rcu_dereference_protected(ss->sk6,
				lockdep_is_held(&srdma_net_mutex));

	lockdep_assert_held(&srdma_net_mutex);
	RCU_INIT_POINTER(ss->sk6, NULL);
	if (sk6) {
		synchronize_rcu();	/* no route lookup uses it any more */
		udp_tunnel_sock_release(sk6);
	}
	if (ss->sk4)
		udp_tunnel_sock_release(ss->sk4);
	ss->sk4 = NULL;
}

/**
 * srdma_sockset_get() - get the socket set of a network namespace
 * @net: the namespace of the device's netdev
 *
 * Creates and binds the namespace's sockets on first use, and takes a
 * reference on the set, which srdma_sockset_put() drops.
 *
 * Context: Process context, may sleep; takes srdma_net_mutex.
 * Return: the set, or ERR_PTR(-EADDRINUSE) when another user (such as
 * rdma_rxe, which binds 4791 in init_net as soon as it loads) holds the
 * port, or another negative errno.
 */
struct srdma_sockset *srdma_sockset_get(struct net *net)
{
	struct srdma_sockset *ss;
	struct socket *sk6;
	int err = 0;

	mutex_lock(&srdma_net_mutex);
	list_for_each_entry(ss, &srdma_socksets, list) {
		if (ss->net == net) {
			refcount_inc(&ss->refcnt);
			goto out_unlock;
		}
	}

	ss = kzalloc(sizeof(*ss), GFP_KERNEL);
	if (!ss) {
		err = -ENOMEM;
		goto out_unlock;
	}
	refcount_set(&ss->refcnt, 1);
	ss->net = net;
	atomic64_set(&ss->rx_dropped, 0);
	atomic64_set(&ss->rx_mcast_dropped, 0);

	ss->sk4 = srdma_udp_open(net, ss, false, &err);
	if (!ss->sk4) {
		pr_err("cannot bind UDP port %u for IPv4: %d%s\n",
		       SRDMA_UDP_PORT, err,
		       err == -EADDRINUSE ?
		       " (port taken, is rdma_rxe loaded in this namespace?)" :
		       "");
		goto err_free_set;
	}
	sk6 = srdma_udp_open(net, ss, true, &err);
	rcu_assign_pointer(ss->sk6, sk6);
	if (!sk6) {
		if (err != -EAFNOSUPPORT) {
			pr_err("cannot bind UDP port %u for IPv6: %d\n",
			       SRDMA_UDP_PORT, err);
			goto err_close_sk4;
		}
		err = 0;	/* IPv6 disabled: IPv4 only */
	}
	list_add(&ss->list, &srdma_socksets);
	goto out_unlock;

err_close_sk4:
	srdma_sockset_close(ss);
err_free_set:
	kfree(ss);
out_unlock:
	mutex_unlock(&srdma_net_mutex);
	return err ? ERR_PTR(err) : ss;
}

/**
 * srdma_sockset_put() - drop a reference on a socket set
 * @ss: a set from srdma_sockset_get()
 *
 * The last reference closes the sockets, if the namespace did not already.
 *
 * Context: Process context, may sleep; takes srdma_net_mutex.
 */
void srdma_sockset_put(struct srdma_sockset *ss)
{
	mutex_lock(&srdma_net_mutex);
	if (refcount_dec_and_test(&ss->refcnt)) {
		if (ss->net)
			list_del(&ss->list);
		srdma_sockset_close(ss);
		kfree(ss);
	}
	mutex_unlock(&srdma_net_mutex);
}

static void __net_exit srdma_net_ns_exit(struct net *net)
{
	struct srdma_sockset *ss, *tmp;

	mutex_lock(&srdma_net_mutex);
	list_for_each_entry_safe(ss, tmp, &srdma_socksets, list) {
		if (ss->net != net)
			continue;
		srdma_sockset_close(ss);
		srdma_qp_drop_routes(ss);
		list_del(&ss->list);
		ss->net = NULL;
	}
	mutex_unlock(&srdma_net_mutex);
}

static struct pernet_operations srdma_net_ops = {
	.exit = srdma_net_ns_exit,
};

/**
 * srdma_net_init() - register the pernet hook that closes a namespace's
 *		      sockets when the namespace goes away
 *
 * Context: Process context (module load), may sleep.
 * Return: 0 or a negative errno.
 */
int srdma_net_init(void)
{
	return register_pernet_subsys(&srdma_net_ops);
}

/**
 * srdma_net_exit() - unregister the pernet hook
 *
 * Context: Process context (module unload), may sleep.
 */
void srdma_net_exit(void)
{
	unregister_pernet_subsys(&srdma_net_ops);
}

/**
 * srdma_route_lookup() - look up the route of an address vector
 * @sdev: the device, whose netdev (or the VLAN upper of the source
 *	  GID, av->ifindex) the route must leave by
 * @av: source and destination addresses, TOS
 * @dstp: on success, a counted dst
 * @cookie: on success, the dst's IPv6 validity cookie (0 for IPv4)
 *
 * Context: Any context.
 * Return: 0 or a negative errno (no route, IPv6 unavailable).
 */
int srdma_route_lookup(struct srdma_dev *sdev, const struct srdma_av *av,
		       struct dst_entry **dstp, u32 *cookie)
{
	struct net_device *ndev = sdev->ndev;
	struct net *net = dev_net(ndev);
	struct flowi6 fl6 = {};
	struct dst_entry *dst;
	struct socket *sk6;

	if (!av->ipv6) {
		struct flowi4 fl = {
			.flowi4_oif = av->ifindex ?: ndev->ifindex,
			.flowi4_proto = IPPROTO_UDP,
			.flowi4_tos = RT_TOS(av->tos),
			.daddr = av->daddr.v4,
			.saddr = av->saddr.v4,
		};
		struct rtable *rt = ip_route_output_key(net, &fl);

		if (IS_ERR(rt))
			return PTR_ERR(rt);
		*dstp = &rt->dst;
		*cookie = 0;
		return 0;
	}

	fl6.flowi6_oif = av->ifindex ?: ndev->ifindex;
	fl6.flowi6_proto = IPPROTO_UDP;
	fl6.daddr = av->daddr.v6;
	fl6.saddr = av->saddr.v6;
	/* The namespace may be going away: its socket with it. */
	rcu_read_lock();
	sk6 = rcu_dereference(sdev->sockset->sk6);
	dst = sk6 ? ipv6_stub->ipv6_dst_lookup_flow(net, sk6->sk, &fl6, NULL) :
		    ERR_PTR(-EAFNOSUPPORT);
	rcu_read_unlock();
	if (IS_ERR(dst))
		return PTR_ERR(dst);
	*dstp = dst;
	*cookie = rt6_get_cookie((struct rt6_info *)dst);
	return 0;
}

/**
 * srdma_qp_note_dst() - note what the QP's new route means for sending
 * @qp: the QP, whose dst just changed
 *
 * Whether the route ends on this host (no pacing: local delivery) and
 * whether packets may carry their payload in page fragments: a device
 * without scatter-gather would have the stack copy each such packet into
 * one buffer (validate_xmit_skb()), which costs more than a copy made by
 * the sender. The loopback takes them; local delivery never reaches a
 * device. Both are hints, read without the lock.
 *
 * Context: dst_lock held.
 */
void srdma_qp_note_dst(struct srdma_qp *qp)
{
	struct dst_entry *dst = qp->dst;
	bool local = dst && dst->dev->flags & IFF_LOOPBACK;

	lockdep_assert_held(&qp->dst_lock);
	WRITE_ONCE(qp->dst_local, local);
	WRITE_ONCE(qp->dst_frags,
		   local || (dst && dst->dev->features & NETIF_F_SG));
}

static struct dst_entry *srdma_get_dst(struct srdma_qp *qp)
{
	struct dst_entry *dst = NULL;

	spin_lock_bh(&qp->dst_lock);
	if (!qp->dst || !dst_check(qp->dst, qp->dst_cookie)) {
		if (qp->dst) {
			dst_release(qp->dst);
			qp->dst = NULL;
		}
		if (srdma_route_lookup(qp->sdev, &qp->av, &qp->dst,
				       &qp->dst_cookie))
			goto out_unlock;
		srdma_qp_note_dst(qp);
	}
	dst = dst_clone(qp->dst);
out_unlock:
	spin_unlock_bh(&qp->dst_lock);
	return dst;
}

/*
 * @pkt as it goes on the wire. An XRC QP sends RC's opcodes in the XRC
 * group; its requests carry an XRCETH (pkt->xrc_srqn): the copy in @xrc.
 * The caller's @pkt stays RC's. post_send lets no opcode through that XRC
 * lacks: NULL if one came.
 */
static struct srdma_pkt *srdma_pkt_wire(struct srdma_qp *qp,
					struct srdma_pkt *pkt,
					struct srdma_pkt *xrc)
{
	if (!srdma_qp_is_xrc(qp))
		return pkt;
	*xrc = *pkt;
	xrc->opcode |= SRDMA_OP_XRC;
	if (WARN_ON_ONCE(!srdma_op_flags(xrc->opcode)))
		return NULL;
	return xrc;
}

/*
 * Link-layer room a packet keeps in front of its IP header at least: a
 * train's packets are split off behind the device the route chose, and
 * whatever they meet after that (a VLAN tag, a redirect into a tunnel)
 * pushes its header into this room, which nothing on the way makes
 * bigger for them (the stack grows only the train's first skb).
 */
#define SRDMA_LL_ROOM_MIN	128

/* Room in front of the transport headers: link layer, IPv6 (the larger), UDP. */
static unsigned int srdma_pkt_headroom(struct net_device *ndev)
{
	return max_t(unsigned int, LL_RESERVED_SPACE(ndev),
		     SRDMA_LL_ROOM_MIN) +
	       sizeof(struct ipv6hdr) + sizeof(struct udphdr);
}

/*
 * Heads (data and shared info) taken from a page fragment: at most a
 * page, as the core's own allocators do (the 6.1 fragment cache can loop
 * for ever on a larger request when only a reserve page is to be had),
 * and, towards another host, more than SRDMA_FRAG_HEAD_MIN bytes, so that
 * a small packet held long (an ACK in a device's transmit ring) does not
 * pin a whole fragment page. A packet of path MTU 1024 or 2048 fits; one
 * of 4096 takes kmalloc() memory. Local delivery frees its packets once
 * its tasklet takes them from the queue (loop_qlen + 15 packets at most
 * wait there), so its small ones (a 2-byte WRITE, an ACK) take fragments
 * too: they share fragment pages, and their kmalloc() heads of 1 KiB,
 * zeroed whole, were a seventh of the kernel's time in a one-guest
 * 2-byte ping-pong (performance.rst).
 */
#define SRDMA_FRAG_HEAD_MIN	1024
#define SRDMA_FRAG_HEAD_MAX	PAGE_SIZE

/*
 * An skb with @size bytes of linear room, for local delivery if @local.
 * The head is a page fragment where one can be had (see above):
 * kmalloc() memory is zeroed whole at every allocation (init_on_alloc,
 * on in distribution kernels), 2 KiB for a packet of 1 KiB of payload,
 * while a fragment cache's page is zeroed once and then reused as long as
 * its packets are freed in time. Every byte of the packet is written by
 * the caller either way (the ICRC's room too, which local delivery leaves
 * as it is).
 */
static struct sk_buff *srdma_alloc_head_mem(u32 size, bool local)
{
	unsigned int truesize = SKB_DATA_ALIGN(size) +
		SKB_DATA_ALIGN(sizeof(struct skb_shared_info));
	struct sk_buff *skb;
	void *data;

	if (truesize > SRDMA_FRAG_HEAD_MAX ||
	    (truesize <= SRDMA_FRAG_HEAD_MIN && !local))
		return alloc_skb(size, GFP_ATOMIC);
	data = netdev_alloc_frag(truesize);
	if (!data)
		return alloc_skb(size, GFP_ATOMIC);
	skb = build_skb(data, truesize);
	if (!skb)
		skb_free_frag(data);
	return skb;
}

/*
 * A test aid: a byte that every packet head is filled with when it is
 * allocated; 0 (the default) leaves heads as the allocator gives them.
 * A fragment head is not zeroed, so a byte its sender forgot to write
 * would carry whatever an earlier packet left there; with a fill byte
 * set, it carries that byte, and a test that checks every byte a
 * receiver hands to a user sees it (tests/rc.sh, poisoned_heads).
 */
static unsigned int poison_heads;
module_param(poison_heads, uint, 0644);
MODULE_PARM_DESC(poison_heads, "test aid: fill every packet head with this byte (1-255) when allocated; 0 off (default)");

static struct sk_buff *srdma_alloc_head(u32 size, bool local)
{
	struct sk_buff *skb = srdma_alloc_head_mem(size, local);
	u8 fill = READ_ONCE(poison_heads);

	if (unlikely(fill) && skb) {
		memset(skb->head, fill, skb_end_offset(skb));
		pr_info_once("packet heads filled with %#04x (poison_heads)\n",
			     fill);
	}
	return skb;
}

/**
 * srdma_alloc_pkt() - allocate a packet and build its transport headers
 * @qp: the sending QP
 * @pkt: the header fields and pkt->paylen; pkt->pad is set here
 * @payload: where to return the payload's room, or NULL
 *
 * Allocates a packet for @pkt with room for its IP/UDP headers and builds
 * BTH and the extension headers. With @payload, also reserves pkt->paylen
 * bytes of payload (returned in *@payload, pad zeroed) plus the ICRC. With
 * @payload NULL the payload is attached as page fragments by the caller,
 * who then calls srdma_pkt_seal().
 *
 * Context: Any context (GFP_ATOMIC).
 * Return: the packet, or NULL if out of memory or pkt->paylen is too big.
 */
struct sk_buff *srdma_alloc_pkt(struct srdma_qp *qp, struct srdma_pkt *pkt,
				u8 **payload)
{
	struct net_device *ndev = qp->sdev->ndev;
	unsigned int head = srdma_pkt_headroom(ndev);
	struct srdma_pkt xrc;
	u32 hlen, body = 0, size;
	struct sk_buff *skb;
	u8 *p;

	/* Never more than one path MTU of payload; never a wrapped size. */
	if (WARN_ON_ONCE(pkt->paylen > ib_mtu_enum_to_int(IB_MTU_4096)))
		return NULL;
	pkt->pad = srdma_pad_len(pkt->paylen);
	pkt = srdma_pkt_wire(qp, pkt, &xrc);
	if (!pkt)
		return NULL;
	hlen = srdma_hdr_len(pkt->opcode);
	if (payload)
		body = pkt->paylen + pkt->pad + SRDMA_ICRC_LEN;
	if (check_add_overflow(head + hlen, body, &size) ||
	    check_add_overflow(size, (u32)ndev->needed_tailroom, &size))
		return NULL;
	skb = srdma_alloc_head(size, READ_ONCE(qp->dst_local));
	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	p = skb_put(skb, hlen + body);
	srdma_build_hdr(p, pkt);
	if (payload) {
		/* The ICRC's room too: local delivery sends none. */
		memset(p + hlen + pkt->paylen, 0, pkt->pad + SRDMA_ICRC_LEN);
		*payload = p + hlen;
	}
	return skb;
}

/**
 * srdma_pkt_seal() - end a packet whose payload was attached as fragments
 * @skb: a packet from srdma_alloc_pkt() with @payload NULL
 * @pkt: its header fields, with the pad
 *
 * Appends the pad and the ICRC's room, zeroed, as one more fragment.
 *
 * Context: Any context (GFP_ATOMIC).
 * Return: 0, -EMSGSIZE if @skb has no fragment slot left, or -ENOMEM.
 */
int srdma_pkt_seal(struct sk_buff *skb, struct srdma_pkt *pkt)
{
	u32 n = pkt->pad + SRDMA_ICRC_LEN;
	int i = skb_shinfo(skb)->nr_frags;
	struct page *pg;
	void *p;

	if (i >= MAX_SKB_FRAGS)
		return -EMSGSIZE;
	p = netdev_alloc_frag(n);
	if (!p)
		return -ENOMEM;
	memset(p, 0, n);
	/* Our own page-fragment memory, never a user page. */
	pg = virt_to_head_page(p);
	skb_fill_page_desc(skb, i, pg, p - page_address(pg), n);
	skb->len += n;
	skb->data_len += n;
	skb->truesize += n;
	return 0;
}

/*
 * Local delivery. A packet whose route ends on this host's loopback would
 * go down the IP stack and straight back up to our own socket. srdma_loop
 * skips that: the sender queues it and a tasklet hands it to the receive
 * path in softirq, a packet budget at a time. Never in the sender's
 * context: it may hold the locks the receiver takes.
 *
 * One queue for the host, not one per CPU: a QP's packets leave from
 * whichever CPU runs its requester (post_send on one, an ACK in softirq
 * on another), and per-CPU queues drained independently would hand them
 * to the responder out of order, each time a sequence NAK and a resend.
 * The queue is FIFO and only one run of the tasklet drains it at a time,
 * so every packet arrives in the order it was sent, whatever its kind.
 *
 * Where the tasklet starts (loop_spread). On the sender's CPU, as its BHs
 * go on, a process's doorbell returns with its packets delivered and
 * answered: it never posts ahead of them. On another CPU (an IPI,
 * smp_call_function_single_async()), the doorbell returns once they are
 * queued, and the process posts into its ring while they are in flight,
 * without doorbells; but a ping-pong waits for an IPI at every turn.
 * Under emulation that doubles small-message rates and doubles round
 * trips (performance.rst), so by default only the packets of a QP that
 * receives no requests (a one-way stream) start it on another CPU.
 *
 * The tasklet's call of srdma_rcv_local() is the one call from the
 * transmit side back into the receive path: the packet turns around here.
 */
#define SRDMA_LOOP_BUDGET	64
#define SRDMA_LOOP_QLEN		4096

/*
 * Packets the local delivery queue holds (a batch offered to a queue with
 * room goes in whole, see srdma_loop_xmit()); beyond, a packet is dropped
 * and its sender told (-ENOBUFS). Lower values exercise that path in tests.
 * 0 or above the default means the default. Read at module load.
 */
static unsigned int loop_qlen = SRDMA_LOOP_QLEN;
module_param(loop_qlen, uint, 0444);
MODULE_PARM_DESC(loop_qlen, "packets queued for local delivery at most (default and max 4096)");

/*
 * Start local delivery on another CPU than the sender's (see above):
 * 0 never; 1 for packets of a QP that has had no request for a few
 * jiffies (a one-way stream, not a ping-pong); 2 always.
 */
static unsigned int loop_spread = 1;
module_param(loop_spread, uint, 0644);
MODULE_PARM_DESC(loop_spread, "local delivery on another CPU: 0 never, 1 for one-way streams (default), 2 always");

/* A QP with a request within this many jiffies is in a ping-pong. */
#define SRDMA_LOOP_PINGPONG_JIFFIES	2

/* Should a packet of @qp start local delivery on another CPU? */
static bool srdma_loop_spread(struct srdma_qp *qp)
{
	switch (READ_ONCE(loop_spread)) {
	case 0:
		return false;
	case 1:
		return !srdma_loop_pingpong(qp);
	default:
		return true;
	}
}

static struct {
	/*
	 * Protects q and running; taken with BHs off, by senders in any
	 * context that may transmit and by the tasklet.
	 */
	spinlock_t lock;
	struct sk_buff_head q;
	u32 npkts;		/* packets in q, a batch's all counted */
	/* A tasklet run is scheduled or under way and will look at q. */
	bool running;
	u32 qlen;		/* npkts' limit, set at load */
	/*
	 * Places in the queue: the last one given (under lock) and the last
	 * one delivered (by the tasklet, whose runs never overlap).
	 */
	unsigned long enq_seq;
	unsigned long done_seq;
	struct tasklet_struct tasklet;
	/*
	 * Schedules the tasklet on the CPU it is sent to (hard IRQ). Sent
	 * only by the sender that set running, and running is cleared by
	 * the tasklet run that the call itself scheduled: while running is
	 * false, no call is on its way and the csd is free.
	 */
	call_single_data_t start;
} srdma_loop;

/* Packets @skb stands for: a batch's, or itself. */
static u32 srdma_loop_pkts(struct sk_buff *skb)
{
	return max_t(u32, srdma_loop_cb(skb)->nsub, 1);
}

static void srdma_loop_run(struct tasklet_struct *t)
{
	unsigned long seq;
	struct sk_buff *skb;
	int budget;
	u32 n = 0;

	for (budget = SRDMA_LOOP_BUDGET; budget > 0; budget -= n) {
		spin_lock(&srdma_loop.lock);
		skb = __skb_dequeue(&srdma_loop.q);
		if (skb) {
			n = srdma_loop_pkts(skb);
			srdma_loop.npkts -= n;
		} else {
			srdma_loop.running = false;
		}
		spin_unlock(&srdma_loop.lock);
		if (!skb)
			return;
		seq = srdma_loop_cb(skb)->seq;
		srdma_rcv_local(skb);
		/* After all it did: srdma_loop_delivered() then sees it done. */
		smp_store_release(&srdma_loop.done_seq, seq);
	}
	/* Budget spent, running still set: let other softirq work go first. */
	tasklet_schedule(&srdma_loop.tasklet);
}

/* Hard IRQ on the CPU srdma_loop_kick() chose: run the tasklet there. */
static void srdma_loop_start(void *info)
{
	tasklet_schedule(&srdma_loop.tasklet);
}

/*
 * The CPU after @self that may take local delivery: online, not isolated
 * (isolcpus, nohz_full), and, for a sender in task context, one its
 * process may run on, so that its receive work stays in its cpuset.
 * @self if there is none.
 */
static unsigned int srdma_loop_cpu(unsigned int self)
{
	const struct cpumask *hk = housekeeping_cpumask(HK_TYPE_DOMAIN);
	unsigned int cpu;

	cpu = cpumask_next_and(self, cpu_online_mask, hk);
	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first_and(cpu_online_mask, hk);
	if (cpu >= nr_cpu_ids || !housekeeping_cpu(cpu, HK_TYPE_MISC) ||
	    (in_task() && !cpumask_test_cpu(cpu, current->cpus_ptr)))
		return self;
	return cpu;
}

/*
 * Start the tasklet: if @spread on another CPU (srdma_loop_cpu()), else
 * (or with none to take it) on this one.
 */
static void srdma_loop_kick(bool spread)
{
	unsigned int self, cpu;
	bool sent = false;

	if (spread) {
		/* Preemption off: neither CPU can finish going offline. */
		self = get_cpu();
		cpu = srdma_loop_cpu(self);
		if (cpu != self)
			sent = !smp_call_function_single_async(cpu,
							       &srdma_loop.start);
		put_cpu();
	}
	if (!sent)
		tasklet_schedule(&srdma_loop.tasklet);
}

/*
 * Queue @skb of @qp (IP header built, no ICRC; a batch or not, as its cb
 * says) for local delivery.
 */
static int srdma_loop_xmit(struct srdma_qp *qp, struct net *net,
			   struct sk_buff *skb)
{
	bool kick = false;
	int err = 0;
	u32 n;

	skb_dst_drop(skb);
	srdma_loop_cb(skb)->net_cookie = net->net_cookie;
	n = srdma_loop_pkts(skb);
	spin_lock_bh(&srdma_loop.lock);
	/*
	 * Any room takes a whole batch: the limit is soft by at most one
	 * batch less a packet (SRDMA_BATCH_PKTS - 1). Were a batch to need
	 * room for all its packets, a READ responder's burst of 16 offered
	 * to a 16-packet queue (loop_qlen=16) would go in only when the
	 * queue was empty, and with its requester's next READ requests
	 * always queued first (a slow kernel) never did: the READ ran out
	 * of retries (debug kernel, 2026-12-05).
	 */
	if (srdma_loop.npkts < srdma_loop.qlen) {
		srdma_loop_cb(skb)->seq = ++srdma_loop.enq_seq;
		qp->loop_seq = srdma_loop.enq_seq;
		__skb_queue_tail(&srdma_loop.q, skb);
		srdma_loop.npkts += n;
		kick = !srdma_loop.running;
		srdma_loop.running = true;
	} else {
		err = -ENOBUFS;
	}
	spin_unlock_bh(&srdma_loop.lock);
	if (err)
		kfree_skb(skb);
	else if (kick)
		srdma_loop_kick(srdma_loop_spread(qp));
	return err;
}

/**
 * srdma_loop_pingpong() - is @qp in a ping-pong?
 * @qp: the QP
 *
 * Context: Any.
 * Return: true if it had a request within SRDMA_LOOP_PINGPONG_JIFFIES:
 * not a one-way stream, whose packets local delivery takes on another
 * CPU (loop_spread) while the process posts ahead of them.
 */
bool srdma_loop_pingpong(const struct srdma_qp *qp)
{
	return !time_after(jiffies, READ_ONCE(qp->rx_req_at) +
			   SRDMA_LOOP_PINGPONG_JIFFIES);
}

/**
 * srdma_route_local() - does @qp's route end on this host now?
 * @qp: a connected QP
 *
 * Looked up as for a packet (srdma_get_dst() checks the cached route):
 * a device taken down or an address removed ends it.
 *
 * Context: QP lock held.
 * Return: true if its packets would go to local delivery.
 */
bool srdma_route_local(struct srdma_qp *qp)
{
	struct dst_entry *dst = srdma_get_dst(qp);
	bool local = dst && (dst->dev->flags & IFF_LOOPBACK);

	dst_release(dst);
	return local;
}

/**
 * srdma_loop_delivered() - has local delivery handed on all that @qp queued?
 * @qp: the QP
 *
 * Context: QP lock held (loop_seq changes under it).
 * Return: true if the last packet @qp queued for local delivery, if any,
 * has been received (srdma_rcv_local() returned for it).
 */
bool srdma_loop_delivered(const struct srdma_qp *qp)
{
	lockdep_assert_held(&qp->lock);
	/* Pairs with srdma_loop_run()'s release of each place delivered. */
	return (long)(smp_load_acquire(&srdma_loop.done_seq) -
		      qp->loop_seq) >= 0;
}

/**
 * srdma_loop_init() - set up the local delivery queue
 *
 * Context: Process context (module load).
 */
void srdma_loop_init(void)
{
	BUILD_BUG_ON(sizeof(struct srdma_loop_cb) >
		     sizeof_field(struct sk_buff, cb));
	spin_lock_init(&srdma_loop.lock);
	__skb_queue_head_init(&srdma_loop.q);
	srdma_loop.npkts = 0;
	srdma_loop.running = false;
	srdma_loop.qlen = loop_qlen && loop_qlen < SRDMA_LOOP_QLEN ?
			  loop_qlen : SRDMA_LOOP_QLEN;
	tasklet_setup(&srdma_loop.tasklet, srdma_loop_run);
	INIT_CSD(&srdma_loop.start, srdma_loop_start, NULL);
}

/**
 * srdma_loop_exit() - stop local delivery and drop what is queued
 *
 * Context: Process context (module unload), with no device left to queue
 * more.
 */
void srdma_loop_exit(void)
{
	/*
	 * A start still on its way would schedule the tasklet after
	 * tasklet_kill(). The run that clears running comes after it: wait
	 * for the queue to drain (with no device, to no QP). tasklet_kill()
	 * then waits for a run still going and keeps the budget path from
	 * scheduling another.
	 */
	while (smp_load_acquire(&srdma_loop.running))
		usleep_range(1000, 2000);
	tasklet_kill(&srdma_loop.tasklet);
	spin_lock_bh(&srdma_loop.lock);
	__skb_queue_purge(&srdma_loop.q);
	srdma_loop.npkts = 0;
	srdma_loop.running = false;
	spin_unlock_bh(&srdma_loop.lock);
}

/* The UDP header, in front of the @len bytes from BTH to the ICRC. */
static void srdma_push_udp(struct srdma_qp *qp, struct sk_buff *skb, u32 len)
{
	struct udphdr *uh = skb_push(skb, sizeof(*uh));

	skb_reset_transport_header(skb);
	uh->source = qp->sport;
	uh->dest = htons(SRDMA_UDP_PORT);
	uh->len = htons(len + sizeof(*uh));
	uh->check = 0;
}

/*
 * The IPv4 header; ip_local_out() fills in the checksum. Its identifier
 * only if @ident: a train's packets get theirs when it leaves.
 */
static void srdma_push_ipv4(struct net *net, const struct srdma_av *av,
			    struct sk_buff *skb, bool ident)
{
	struct iphdr *iph = skb_push(skb, sizeof(*iph));

	skb_reset_network_header(skb);
	iph->version = 4;
	iph->ihl = sizeof(*iph) >> 2;
	iph->tos = av->tos;
	iph->tot_len = htons(skb->len);
	iph->frag_off = htons(IP_DF);
	iph->ttl = av->ttl;
	iph->protocol = IPPROTO_UDP;
	iph->saddr = av->saddr.v4;
	iph->daddr = av->daddr.v4;
	iph->check = 0;
	iph->id = 0;
	if (ident)
		__ip_select_ident(net, iph, 1);
	skb->protocol = htons(ETH_P_IP);
}

/* The IPv6 header, in front of UDP and the @len bytes after it. */
static void srdma_push_ipv6(const struct srdma_av *av, struct sk_buff *skb,
			    u32 len)
{
	struct ipv6hdr *ip6h = skb_push(skb, sizeof(*ip6h));

	skb_reset_network_header(skb);
	ip6_flow_hdr(ip6h, av->tos, 0);
	ip6h->payload_len = htons(len + sizeof(struct udphdr));
	ip6h->nexthdr = IPPROTO_UDP;
	ip6h->hop_limit = av->ttl;
	ip6h->saddr = av->saddr.v6;
	ip6h->daddr = av->daddr.v6;
	skb->protocol = htons(ETH_P_IPV6);
}

/*
 * Onto the wire: send @skb, its ICRCs computed, down the IP stack, and
 * count its @n packets as sent or, if the stack dropped it, as errors.
 * Return: 0 or -EIO.
 */
static int srdma_wire_out(struct srdma_dev *sdev, struct net *net,
			  struct sk_buff *skb, bool ipv6, u32 n)
{
	int err;

	if (!ipv6) {
		memset(IPCB(skb), 0, sizeof(*IPCB(skb)));
		err = ip_local_out(net, NULL, skb);
	} else {
		memset(IP6CB(skb), 0, sizeof(*IP6CB(skb)));
		err = ip6_local_out(net, NULL, skb);
	}
	/* net_xmit_eval() evaluates its argument twice. */
	if (unlikely(net_xmit_eval(err))) {
		srdma_count_add(sdev, SRDMA_CNT_TX_ERR, n);
		return -EIO;
	}
	srdma_count_add(sdev, SRDMA_CNT_TX_PKTS, n);
	return 0;
}

/*
 * The UDP and IP headers of @skb of @qp to @av, which goes out over @dst
 * (a counted reference, which the skb takes over).
 */
static void srdma_push_hdrs(struct srdma_qp *qp, const struct srdma_av *av,
			    struct net *net, struct dst_entry *dst,
			    struct sk_buff *skb, bool train)
{
	u32 len = skb->len;

	srdma_push_udp(qp, skb, len);
	skb_dst_set(skb, dst);
	skb->priority = 0;
#ifdef CONFIG_XPS
	/* XPS picks the transmit queue of the QP's CPU, wherever it runs. */
	skb->sender_cpu = qp->tx_cpu + 1;
#endif
	if (av->ipv6)
		srdma_push_ipv6(av, skb, len);
	else
		srdma_push_ipv4(net, av, skb, !train);
}

/*
 * Send @skb of @qp to @av over @dst (a counted reference, which the skb
 * takes over): UDP and IP headers, then the IP stack or local delivery.
 */
static int srdma_xmit_dst(struct srdma_qp *qp, const struct srdma_av *av,
			  struct dst_entry *dst, struct sk_buff *skb)
{
	struct srdma_dev *sdev = qp->sdev;
	struct net *net = dev_net(sdev->ndev);
	bool local = dst->dev->flags & IFF_LOOPBACK;
	u32 npkts = srdma_loop_pkts(skb);

	srdma_push_hdrs(qp, av, net, dst, skb, false);

	if (!local) {
		srdma_icrc_generate(skb, av->ipv6);
		return srdma_wire_out(sdev, net, skb, av->ipv6, npkts);
	}
	/*
	 * ip_local_out() would set the checksum; a UD receiver hands the
	 * header to its consumer in the GRH area, where
	 * ibv_init_ah_from_wc() tells IPv4 from IPv6 by it.
	 */
	if (!av->ipv6)
		ip_send_check(ip_hdr(skb));
	if (srdma_loop_xmit(qp, net, skb)) {
		srdma_count_add(sdev, SRDMA_CNT_TX_ERR, npkts);
		return -ENOBUFS;
	}
	srdma_count_add(sdev, SRDMA_CNT_TX_PKTS, npkts);
	return 0;
}

/*
 * Packet trains. Towards another host, each packet down the IP stack costs
 * a route, the netfilter hooks, the qdisc and, at the device, a doorbell
 * (under emulation a VM exit, the largest share of the sender's time per
 * packet). A TCP sender pays the stack once per GSO packet, and shares
 * doorbells where its queue backs up (the qdisc's bulk dequeue). A run's
 * wire packets do the same: gathered in a train, they go down the stack as
 * one UDP GSO packet of the fraglist kind (SKB_GSO_FRAGLIST, as UDP GRO
 * makes when forwarding), which the device's transmit path splits back
 * into the very packets we built, each with its own headers, and hands to
 * the driver with one doorbell for all.
 *
 * Each packet keeps its own IP and UDP headers; the split only copies the
 * link-layer header and renumbers the IPv4 identifiers from the first
 * packet's (inet_gso_segment()). So the ICRCs, which cover the
 * identifier, are computed when the train leaves, after the identifiers
 * are set as the split will set them. The first packet's UDP length
 * covers the train while it is one skb (the split sets it back).
 *
 * Only towards a device that splits it (no NETIF_F_GSO_FRAGLIST): one
 * that takes GSO packets whole (veth, bridges, tunnels) would carry the
 * train as one packet to a capture or a qdisc past it, which expect
 * RoCEv2 packets. A qdisc in front of the device sees the train as one
 * packet, as it sees a TCP GSO packet: netem's loss drops all of it.
 */

#define SRDMA_TRAIN_PKTS	16
#define SRDMA_TRAIN_PKTS_MAX	64
/* UDP payload bytes at most: IP's 16-bit lengths stay true. */
#define SRDMA_TRAIN_BYTES	(60 * 1024)

/*
 * Packets a train holds at most; 0 or 1: no trains. Read when a run
 * begins.
 */
static unsigned int tx_train = SRDMA_TRAIN_PKTS;
module_param(tx_train, uint, 0644);
MODULE_PARM_DESC(tx_train, "wire packets sent as one GSO packet at most (default 16, max 64; 0 or 1: each alone)");

static u32 srdma_train_max(void)
{
	return min_t(u32, READ_ONCE(tx_train), SRDMA_TRAIN_PKTS_MAX);
}

/* Does @dev split a train (the software GSO in its transmit path)? */
static bool srdma_train_dev(const struct net_device *dev)
{
	return !(dev->flags & IFF_LOOPBACK) &&
	       !(READ_ONCE(dev->features) & NETIF_F_GSO_FRAGLIST);
}

/**
 * srdma_train_flush() - send the QP's train, if it has one
 * @qp: the QP
 *
 * Context: QP lock held (BHs off).
 * Return: 0; -EIO if the IP stack dropped the train (all its packets are
 * lost, as on a wire, and counted).
 */
static int srdma_train_flush(struct srdma_qp *qp)
{
	struct sk_buff *head = qp->train, *seg;
	struct skb_shared_info *shi;
	u32 n = qp->train_n, i;
	bool ipv6 = qp->av.ipv6;
	struct net *net;
	struct udphdr *uh;
	u16 id = 0;
	int err;

	lockdep_assert_held(&qp->lock);
	if (!head)
		return 0;
	qp->train = NULL;
	qp->train_tail = NULL;
	qp->train_n = 0;
	qp->train_len = 0;

	net = dev_net(qp->sdev->ndev);
	if (!ipv6) {
		/* n identifiers, the first packet's first, as the split does. */
		__ip_select_ident(net, ip_hdr(head), n);
		id = ntohs(ip_hdr(head)->id);
	}
	for (seg = head, i = 0; seg; seg = seg->next, i++) {
		if (!ipv6)
			ip_hdr(seg)->id = htons(id + i);
		srdma_icrc_generate(seg, ipv6);
	}
	if (n == 1)
		return srdma_wire_out(qp->sdev, net, head, ipv6, 1);

	/*
	 * The rest hang on the first's frag_list, each from its UDP payload
	 * on, as GRO leaves them; the split pushes their headers back.
	 */
	shi = skb_shinfo(head);
	shi->frag_list = head->next;
	head->next = NULL;
	for (seg = shi->frag_list; seg; seg = seg->next) {
		skb_dst_drop(seg);
		__skb_pull(seg, skb_transport_offset(seg) +
			   sizeof(struct udphdr));
		head->len += seg->len;
		head->data_len += seg->len;
		head->truesize += seg->truesize;
	}
	uh = udp_hdr(head);
	shi->gso_size = ntohs(uh->len) - sizeof(*uh);
	shi->gso_type = SKB_GSO_UDP_L4 | SKB_GSO_FRAGLIST;
	shi->gso_segs = n;
	uh->len = htons(head->len - skb_transport_offset(head));
	/* No checksum to fill in: UDP's is zero, the ICRC's are done. */
	head->ip_summed = CHECKSUM_UNNECESSARY;
	err = srdma_wire_out(qp->sdev, net, head, ipv6, n);
	if (!err)
		srdma_count(qp->sdev, SRDMA_CNT_TX_TRAINS);
	return err;
}

/*
 * Can @skb of @qp, its transport headers built, join a train over @dst?
 * Not through another route than the train's (all leave over its first
 * packet's), not with less link-layer room than SRDMA_LL_ROOM_MIN, and
 * not over the route's MTU: the device's GSO checks only the first
 * packet's length, and alone it would be refused (-EMSGSIZE).
 */
static bool srdma_train_fits(struct srdma_qp *qp, struct dst_entry *dst,
			     struct sk_buff *skb)
{
	u32 iplen = qp->av.ipv6 ? sizeof(struct ipv6hdr) :
				  sizeof(struct iphdr);

	if (qp->train && skb_dst(qp->train) != dst)
		return false;
	if (skb_headroom(skb) < SRDMA_LL_ROOM_MIN + iplen +
				sizeof(struct udphdr))
		return false;
	return skb->len + iplen + sizeof(struct udphdr) <= dst_mtu(dst);
}

/*
 * Put @skb of @qp, over @dst (a counted reference the skb takes over), at
 * the end of the QP's train, sending the train first if it is full.
 * Return: 0, or the error of that train.
 */
static int srdma_train_add(struct srdma_qp *qp, struct dst_entry *dst,
			   struct sk_buff *skb)
{
	struct net *net = dev_net(qp->sdev->ndev);
	u32 len = skb->len;
	int flushed = 0;

	lockdep_assert_held(&qp->lock);
	if (qp->train && (qp->train_n >= srdma_train_max() ||
			  qp->train_len + len > SRDMA_TRAIN_BYTES))
		flushed = srdma_train_flush(qp);
	srdma_push_hdrs(qp, &qp->av, net, dst, skb, true);
	skb->next = NULL;
	if (qp->train)
		qp->train_tail->next = skb;
	else
		qp->train = skb;
	qp->train_tail = skb;
	qp->train_n++;
	qp->train_len += len;
	return flushed;
}

/**
 * srdma_xmit() - send a packet of a connected QP
 * @qp: the sending QP, whose address vector says where
 * @skb: a packet from srdma_alloc_pkt(), sealed if its payload is in
 *	 fragments; consumed
 *
 * Adds the UDP and IP headers, then either computes the ICRC and sends
 * @skb through the IP stack, adds it to the QP's train (while a run
 * gathers one: the ICRC when the train leaves) or, if the route ends on
 * this host, queues it for local delivery without an ICRC.
 *
 * Context: Any context, with the QP lock held (BHs off).
 * Return: 0; -EHOSTUNREACH with no route; -ENOBUFS if the local delivery
 * queue is full; -EIO if the IP stack dropped the packet. Also if the
 * QP's batch or a full train, sent first, was dropped.
 */
int srdma_xmit(struct srdma_qp *qp, struct sk_buff *skb)
{
	struct dst_entry *dst;
	int flushed;

	lockdep_assert_held(&qp->lock);	/* keeps the AV whole */
	/* What the QP sent before goes first; its loss is told too. */
	flushed = srdma_batch_flush(qp);
	srdma_loop_cb(skb)->nsub = 0;
	dst = srdma_get_dst(qp);
	if (!dst) {
		kfree_skb(skb);
		srdma_count(qp->sdev, SRDMA_CNT_TX_ERR);
		srdma_train_flush(qp);	/* its packets have their routes */
		return -EHOSTUNREACH;
	}
	if (qp->training && srdma_train_dev(dst->dev) &&
	    srdma_train_fits(qp, dst, skb))
		return srdma_train_add(qp, dst, skb) ?: flushed;
	flushed = srdma_train_flush(qp) ?: flushed;
	return srdma_xmit_dst(qp, &qp->av, dst, skb) ?: flushed;
}

/**
 * srdma_xmit_ud() - send a datagram of a UD QP
 * @qp: the sending QP
 * @av: where to, from the work request's AH
 * @skb: as for srdma_xmit(); consumed
 *
 * The route is looked up for each datagram: a UD QP has no one peer
 * whose route it could cache.
 *
 * Context: Any context, with the QP lock held (BHs off).
 * Return: as srdma_xmit().
 */
int srdma_xmit_ud(struct srdma_qp *qp, const struct srdma_av *av,
		  struct sk_buff *skb)
{
	struct dst_entry *dst;
	u32 cookie;

	lockdep_assert_held(&qp->lock);
	srdma_loop_cb(skb)->nsub = 0;
	if (srdma_route_lookup(qp->sdev, av, &dst, &cookie)) {
		kfree_skb(skb);
		srdma_count(qp->sdev, SRDMA_CNT_TX_ERR);
		return -EHOSTUNREACH;
	}
	return srdma_xmit_dst(qp, av, dst, skb);
}

/*
 * Local delivery batches. The SEND, WRITE and READ response packets that
 * a run of a QP's requester or READ responder sends back to back to a QP
 * on this host go to the local delivery queue together, in one skb: a
 * batch, which saves an skb, a queueing and a QP lookup per packet. It
 * is never on a wire and never leaves this module.
 *
 * After the IP and UDP headers, a batch's linear part is an area of
 * SRDMA_BATCH_AREA bytes, of which its cb's used are entries, one per
 * packet in PSN order: a struct srdma_batch_ent, the packet's transport
 * headers as on the wire, and a copied payload. Payloads attached from
 * memory (zero-copy) follow the area in the fragments, in packet order.
 * No pad and no ICRC. srdma_rcv_batch() parses every packet from its
 * headers and the length its entry gives, as it parses one from the
 * wire, and hands each on alone.
 *
 * The run sets qp->batching (srdma_batch_begin()) and sends the batch
 * when it ends (srdma_batch_end()), all under the QP lock: no batch
 * outlives the lock hold. Any other packet of the QP sends the batch
 * first (srdma_xmit()), so packets leave in the order they were made.
 */
#define SRDMA_BATCH_AREA	1536
#define SRDMA_BATCH_PKTS	16

/*
 * Packets a batch holds at most; 0 or 1: no batches. Above the default
 * means the default. Read when a run begins.
 */
static unsigned int loop_batch = SRDMA_BATCH_PKTS;
module_param(loop_batch, uint, 0644);
MODULE_PARM_DESC(loop_batch, "packets a local delivery batch holds at most (default and max 16, 0 or 1: no batches)");

static u32 srdma_batch_max(void)
{
	return min_t(u32, READ_ONCE(loop_batch), SRDMA_BATCH_PKTS);
}

/* Fragment bytes at most: IP's 16-bit lengths stay true. */
#define SRDMA_BATCH_FRAG_BYTES	(32 * 1024)

/**
 * srdma_batch_begin() - gather the QP's packets in batches or trains
 * @qp: the QP, about to send
 *
 * Batches where the route ends on this host, trains where it does not (a
 * hint: srdma_xmit() looks at the route of each packet).
 *
 * Context: QP lock held.
 * Return: whether a batch was being gathered already (a run inside a
 * run), for srdma_batch_end().
 */
bool srdma_batch_begin(struct srdma_qp *qp)
{
	bool outer = qp->batching || qp->training;
	bool local;

	lockdep_assert_held(&qp->lock);
	/* A batch or train with no run gathering it would never be sent. */
	WARN_ON_ONCE(!outer && (qp->batch || qp->train));
	if (!outer) {
		local = READ_ONCE(qp->dst_local);
		qp->batching = local && srdma_batch_max() > 1;
		qp->training = !local && srdma_train_max() > 1;
	}
	return outer;
}

/**
 * srdma_batch_end() - end a run's batching, sending its batch and train
 * @qp: the QP
 * @outer: what srdma_batch_begin() returned
 *
 * Context: QP lock held.
 * Return: as srdma_batch_flush() or srdma_train_flush(); 0 inside an
 * outer run, which sends them.
 */
int srdma_batch_end(struct srdma_qp *qp, bool outer)
{
	int err;

	lockdep_assert_held(&qp->lock);
	if (outer)
		return 0;
	qp->batching = false;
	qp->training = false;
	err = srdma_train_flush(qp);
	return srdma_batch_flush(qp) ?: err;
}

/* A new batch, its area reserved, none of it used. */
static struct sk_buff *srdma_batch_alloc(struct srdma_qp *qp)
{
	unsigned int head = srdma_pkt_headroom(qp->sdev->ndev);
	struct sk_buff *skb;

	skb = srdma_alloc_head(head + SRDMA_BATCH_AREA, true);
	if (!skb)
		return NULL;
	skb_reserve(skb, head);
	skb_put(skb, SRDMA_BATCH_AREA);
	srdma_loop_cb(skb)->nsub = 0;
	srdma_loop_cb(skb)->used = 0;
	return skb;
}

/**
 * srdma_batch_add() - make room for a packet in the QP's batch
 * @qp: the QP, batching
 * @pkt: the packet's header fields and pkt->paylen; pkt->pad is set here
 * @copied: bytes of payload to copy into the area (all or none of it);
 *	    else pkt->paylen bytes follow as fragments
 * @ent_len: set to the bytes of area the packet takes
 *
 * Writes the entry and the headers in the area of the QP's batch (a new
 * one if it has none) after the entries in use. The caller adds the
 * payload, then commits the packet with srdma_batch_commit(), or leaves
 * it out by not doing so (and trims any fragments it added).
 *
 * Context: QP lock held.
 * Return: where a copied payload goes; NULL if the batch has no room for
 * the packet (send it and try a new one) or no memory.
 */
u8 *srdma_batch_add(struct srdma_qp *qp, struct srdma_pkt *pkt, u32 copied,
		    u32 *ent_len)
{
	struct srdma_batch_ent ent;
	struct srdma_loop_cb *cb;
	struct srdma_pkt xrc, *w;
	struct sk_buff *skb;
	u32 hlen, need;
	u8 *p;

	lockdep_assert_held(&qp->lock);
	if (WARN_ON_ONCE(pkt->paylen > ib_mtu_enum_to_int(IB_MTU_4096) ||
			 (copied && copied != pkt->paylen)))
		return NULL;
	if (!qp->batch) {
		qp->batch = srdma_batch_alloc(qp);
		if (!qp->batch)
			return NULL;
	}
	skb = qp->batch;
	cb = srdma_loop_cb(skb);
	if (cb->nsub >= srdma_batch_max() ||
	    (!copied && skb->data_len + pkt->paylen > SRDMA_BATCH_FRAG_BYTES))
		return NULL;
	pkt->pad = srdma_pad_len(pkt->paylen);
	w = srdma_pkt_wire(qp, pkt, &xrc);
	if (!w)
		return NULL;
	hlen = srdma_hdr_len(w->opcode);
	need = sizeof(ent) + hlen + copied;
	if (need > SRDMA_BATCH_AREA - cb->used)
		return NULL;
	ent.len = hlen + pkt->paylen + pkt->pad + SRDMA_ICRC_LEN;
	ent.copied = !!copied || !pkt->paylen;
	p = skb->data + cb->used;
	memcpy(p, &ent, sizeof(ent));
	srdma_build_hdr(p + sizeof(ent), w);
	*ent_len = need;
	return p + sizeof(ent) + hlen;
}

/**
 * srdma_batch_commit() - count the packet srdma_batch_add() made room for
 * @qp: the QP
 * @ent_len: what srdma_batch_add() set
 *
 * Context: QP lock held.
 */
void srdma_batch_commit(struct srdma_qp *qp, u32 ent_len)
{
	struct srdma_loop_cb *cb = srdma_loop_cb(qp->batch);

	lockdep_assert_held(&qp->lock);
	cb->nsub++;
	cb->used += ent_len;
}

/**
 * srdma_batch_flush() - send the QP's batch, if it has one
 * @qp: the QP
 *
 * A batch whose route no longer ends on this host is dropped: it cannot
 * go on a wire. Its packets are lost, as on a wire, and sent again.
 *
 * Context: QP lock held.
 * Return: 0, or as srdma_xmit() if the batch was dropped on this host
 * (-EHOSTUNREACH also for a route that left it).
 */
int srdma_batch_flush(struct srdma_qp *qp)
{
	struct sk_buff *skb = qp->batch;
	struct dst_entry *dst;
	u32 n, unused;
	int err;

	lockdep_assert_held(&qp->lock);
	if (!skb)
		return 0;
	qp->batch = NULL;
	n = srdma_loop_cb(skb)->nsub;
	if (!n) {
		consume_skb(skb);
		return 0;
	}
	/*
	 * The area's unused end goes: its bytes were never written. The
	 * fragments stay, after the entries, where the receiver looks.
	 */
	unused = SRDMA_BATCH_AREA - srdma_loop_cb(skb)->used;
	skb->tail -= unused;
	skb->len -= unused;
	dst = srdma_get_dst(qp);
	if (!dst || !(dst->dev->flags & IFF_LOOPBACK)) {
		dst_release(dst);
		kfree_skb(skb);
		srdma_count_add(qp->sdev, SRDMA_CNT_TX_ERR, n);
		return -EHOSTUNREACH;
	}
	err = srdma_xmit_dst(qp, &qp->av, dst, skb);	/* counts failures */
	if (!err)
		srdma_count(qp->sdev, SRDMA_CNT_TX_BATCH);
	return err;
}
