// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma receive path: the UDP tunnel socket's encap_rcv hook, called in
 * softirq context for every datagram to port 4791. It validates the
 * packet (headers, ICRC, QP, addresses), then hands it to the responder
 * (requests) or the completer (ACKs and READ responses) of its QP.
 * Packets that srdma_xmit() looped back on this host enter the same way,
 * from srdma_net.c's local delivery tasklet, without an ICRC.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/skbuff.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/udp_tunnel.h>

#include "srdma.h"

/*
 * The packet must come from the QP's peer, to the QP's own address. QP
 * lock held: the address vector changes under it.
 */
static bool srdma_addr_ok(struct srdma_qp *qp, struct sk_buff *skb, bool ipv6)
{
	const struct srdma_av *av = &qp->av;

	lockdep_assert_held(&qp->lock);
	if (ipv6 != av->ipv6)
		return false;
	if (!ipv6)
		return ip_hdr(skb)->saddr == av->daddr.v4 &&
		       ip_hdr(skb)->daddr == av->saddr.v4;
	return ipv6_addr_equal(&ipv6_hdr(skb)->saddr, &av->daddr.v6) &&
	       ipv6_addr_equal(&ipv6_hdr(skb)->daddr, &av->saddr.v6);
}

/*
 * Find the UDP payload of @skb (its offset in *@payoff, its length in
 * *@udp_paylen) and parse its transport headers into @pkt.
 */
static bool srdma_rcv_parse(struct sk_buff *skb, bool ipv6, int *payoff,
			    u32 *udp_paylen, struct srdma_pkt *pkt)
{
	int iplen = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u8 buf[SRDMA_MAX_HDR_LEN];
	const u8 *hdr;
	u32 len, avail;

	/* No IP options or IPv6 extension headers in RoCEv2. */
	if (skb_transport_header(skb) - skb_network_header(skb) != iplen)
		return false;
	*payoff = skb_transport_offset(skb) + sizeof(struct udphdr);
	len = ntohs(udp_hdr(skb)->len);
	if (len < sizeof(struct udphdr))
		return false;
	len -= sizeof(struct udphdr);
	if (*payoff < 0 || (u32)*payoff + len > skb->len)
		return false;
	*udp_paylen = len;

	avail = min_t(u32, len, SRDMA_MAX_HDR_LEN);
	hdr = skb_header_pointer(skb, *payoff, avail, buf);
	return hdr && !srdma_parse(hdr, avail, len, pkt);
}

/*
 * Hand @pkt, its payload at @payload in @skb, to the responder (requests)
 * or the completer (responses) of @qp, under the QP lock, if it comes
 * from the QP's peer; to a connected QP still in RESET or INIT nothing is
 * delivered (counted as a bad QP state, not as a bad header). UD packets
 * go to UD QPs only, and anyone may send them; UC packets to UC QPs only; XRC
 * requests to XRC target QPs and XRC responses to XRC initiators, as RC
 * opcodes from then on; the rest to RC QPs.
 */
static bool srdma_rcv_deliver(struct srdma_qp *qp, struct srdma_pkt *pkt,
			      struct sk_buff *skb, int payload, bool ipv6)
{
	if (srdma_qp_is_ud(qp) != !!(pkt->flags & SRDMA_F_UD) ||
	    srdma_qp_is_uc(qp) != !!(pkt->flags & SRDMA_F_UC) ||
	    srdma_qp_is_xrc(qp) != !!(pkt->flags & SRDMA_F_XRC))
		return false;
	if (pkt->flags & SRDMA_F_XRC) {
		if (srdma_qp_is_xrc_tgt(qp) != !!(pkt->flags & SRDMA_F_REQ))
			return false;
		/* The flags keep SRDMA_F_XRC and the XRCETH's. */
		pkt->opcode &= ~SRDMA_OP_TRANSPORT_MASK;
	}
	spin_lock_bh(&qp->lock);
	if (srdma_qp_is_ud(qp)) {
		srdma_ud_rcv(qp, pkt, skb, payload, ipv6);
	} else if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_INIT) {
		/* No peer yet, whose address a packet could match. */
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_STATE);
	} else if (!srdma_addr_ok(qp, skb, ipv6)) {
		spin_unlock_bh(&qp->lock);
		return false;
	} else if (pkt->flags & SRDMA_F_REQ) {
		srdma_resp_rcv(qp, pkt, skb, payload);
	} else {
		srdma_comp_rcv(qp, pkt, skb, payload);
	}
	spin_unlock_bh(&qp->lock);
	return true;
}

/* The packet's destination address as a RoCEv2 GID. */
static void srdma_rcv_dgid(struct sk_buff *skb, bool ipv6, union ib_gid *dgid)
{
	if (ipv6)
		memcpy(dgid->raw, &ipv6_hdr(skb)->daddr, sizeof(dgid->raw));
	else
		ipv6_addr_set_v4mapped(ip_hdr(skb)->daddr,
				       (struct in6_addr *)dgid->raw);
}

/*
 * Is @skb addressed to more than one host: a multicast group, or an IPv4
 * broadcast (limited, or directed as the route that took it in says)?
 */
static bool srdma_rcv_to_mcast(struct sk_buff *skb, bool ipv6)
{
	struct rtable *rt;
	__be32 daddr;

	if (ipv6)
		return ipv6_addr_is_multicast(&ipv6_hdr(skb)->daddr);
	daddr = ip_hdr(skb)->daddr;
	if (ipv4_is_multicast(daddr) || ipv4_is_lbcast(daddr))
		return true;
	rt = skb_rtable(skb);
	return rt && (rt->rt_flags & RTCF_BROADCAST);
}

/*
 * The QP @pkt is for, with a reference. QPN 1 names the GSI QP of the
 * device that owns the packet's destination address and, from a wire,
 * whose netdev it came in through; every other QPN is unique module-wide.
 */
static struct srdma_qp *srdma_rcv_qp(struct sk_buff *skb, bool ipv6,
				     const struct srdma_pkt *pkt,
				     u64 net_cookie)
{
	union ib_gid dgid;

	if (pkt->dqpn != SRDMA_GSI_QPN)
		return srdma_qp_get(pkt->dqpn);
	srdma_rcv_dgid(skb, ipv6, &dgid);
	return srdma_gsi_get(net_cookie, &dgid, skb->dev);
}

/*
 * Did @skb come to @qp's device: to one of its GIDs (those of its
 * netdev's VLAN uppers too) and, from a wire, in through the netdev that
 * GID belongs to? A UD QP takes datagrams from anyone, but only those
 * sent to its own device: its QPN is unique module-wide, and without this
 * a datagram to another srdma device of the namespace (on another
 * network) would reach it. Linux takes a packet to any of its addresses
 * on any interface, so the address alone is not enough: the way in must
 * match too, as rdma_rxe checks. srdma's local delivery, which sets no
 * device, matches by address. Connected QPs check their peer's addresses
 * instead (srdma_addr_ok()); QP1 is found by the address and the way in
 * (srdma_gsi_get()).
 */
static bool srdma_rcv_to_own_gid(struct srdma_qp *qp, struct sk_buff *skb,
				 bool ipv6)
{
	union ib_gid dgid;

	srdma_rcv_dgid(skb, ipv6, &dgid);
	return srdma_dev_has_gid(qp->sdev, &dgid, skb->dev);
}

/*
 * Did @skb come in through lo? srdma never sends through it: packets to
 * this host's own addresses take its local delivery (no device), and no
 * other RoCE stack can hold UDP 4791 beside srdma's socket in the same
 * namespace. So what comes in through lo was sent by an ordinary socket
 * of this host, which any unprivileged process may open: with it, a
 * process could hand QP1 MADs with the privileged Q_Key to the MAD layer
 * (which the core forbids it through its own QPs) or forge the local
 * peer of a connection between two local endpoints (helper-78). Such a
 * packet is dropped for every QP, as rdma_rxe drops it.
 */
static bool srdma_rcv_through_lo(struct sk_buff *skb)
{
	return skb->dev && (skb->dev->flags & IFF_LOOPBACK);
}

/*
 * Hand @pkt of @skb, its payload at @payload, to @qp, the QP its
 * destination QPN names. QPNs are module-wide: the QP must live where the
 * packet arrived, and a UD QP's datagrams must be sent to its device's
 * own addresses. Only the multicast QPN takes datagrams to a multicast
 * address. False, counted, if it may not have it.
 */
static bool srdma_rcv_qp_pkt(struct srdma_qp *qp, struct sk_buff *skb,
			     struct srdma_pkt *pkt, int payload, bool ipv6,
			     u64 net_cookie)
{
	if (!srdma_pkey_is_default(pkt->pkey) || srdma_rcv_through_lo(skb) ||
	    dev_net(qp->sdev->ndev)->net_cookie != net_cookie ||
	    srdma_rcv_to_mcast(skb, ipv6) ||
	    (srdma_qp_is_ud(qp) && pkt->dqpn != SRDMA_GSI_QPN &&
	     !srdma_rcv_to_own_gid(qp, skb, ipv6)) ||
	    !srdma_rcv_deliver(qp, pkt, skb, payload, ipv6)) {
		srdma_dbg_qp(qp, "opcode %#x psn %u dropped: wrong kind, peer or state\n",
			     pkt->opcode, pkt->psn);
		srdma_count(qp->sdev, SRDMA_CNT_RX_BAD_HDR);
		return false;
	}
	return true;
}

/* What became of a datagram: the socket set counts the early drops. */
enum srdma_rcv_result {
	SRDMA_RCV_TAKEN,		/* handed to a QP, or counted there */
	SRDMA_RCV_NO_QP,		/* malformed, or no such QP */
	SRDMA_RCV_NO_GROUP,		/* multicast QPN, no group took it */
};

/*
 * A UD datagram to the multicast QPN, to a multicast address: every QP
 * that the device of the netdev it arrived on attached to that group
 * gets it, each under its own lock; the group's list is walked under RCU
 * only, and never more than SRDMA_MAX_MCAST_QP_ATTACH QPs. The ICRC and
 * the headers are checked once, counted on that device.
 */
static enum srdma_rcv_result srdma_rcv_mcast(struct sk_buff *skb,
					     struct srdma_pkt *pkt,
					     int payoff, u32 udp_paylen,
					     bool ipv6, u64 net_cookie)
{
	struct srdma_qp *qps[SRDMA_MAX_MCAST_QP_ATTACH];
	struct srdma_dev *sdev;
	union ib_gid mgid;
	bool ok = false;
	int i, n;

	if (!skb->dev || !srdma_rcv_to_mcast(skb, ipv6))
		return SRDMA_RCV_NO_GROUP;
	srdma_rcv_dgid(skb, ipv6, &mgid);
	n = srdma_mcast_get(skb->dev, net_cookie, &mgid, qps);
	if (!n)
		return SRDMA_RCV_NO_GROUP;
	sdev = qps[0]->sdev;
	srdma_count(sdev, SRDMA_CNT_RX_PKTS);
	if (!srdma_icrc_check(skb, payoff, udp_paylen, ipv6))
		srdma_count(sdev, SRDMA_CNT_RX_BAD_ICRC);
	else if (!(pkt->flags & SRDMA_F_UD) ||
		 !srdma_pkey_is_default(pkt->pkey))
		srdma_count(sdev, SRDMA_CNT_RX_BAD_HDR);
	else
		ok = true;
	for (i = 0; i < n; i++) {
		if (ok)
			srdma_rcv_deliver(qps[i], pkt, skb,
					  payoff + pkt->hdr_len, ipv6);
		srdma_qp_put(qps[i]);
	}
	return SRDMA_RCV_TAKEN;
}

/*
 * Validate a RoCEv2 datagram (IP header at the network header, UDP at the
 * transport header) received in namespace @net_cookie and hand it to its
 * QP, or its QPs for the multicast QPN. @local: delivered by srdma_loop,
 * never on a wire (and never multicast), no ICRC to check. Consumes @skb.
 */
static enum srdma_rcv_result srdma_rcv(struct sk_buff *skb, u64 net_cookie,
				       bool local)
{
	enum srdma_rcv_result res = SRDMA_RCV_NO_QP;
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	struct srdma_pkt pkt;
	struct srdma_dev *sdev;
	struct srdma_qp *qp;
	u32 udp_paylen;
	int payoff;

	if (!srdma_rcv_parse(skb, ipv6, &payoff, &udp_paylen, &pkt))
		goto drop;
	if (pkt.dqpn == SRDMA_MCAST_QPN) {
		res = local ? SRDMA_RCV_NO_GROUP :
		      srdma_rcv_mcast(skb, &pkt, payoff, udp_paylen, ipv6,
				      net_cookie);
		if (res != SRDMA_RCV_TAKEN)
			goto drop;
		consume_skb(skb);
		return res;
	}
	qp = srdma_rcv_qp(skb, ipv6, &pkt, net_cookie);
	if (!qp)
		goto drop;
	res = SRDMA_RCV_TAKEN;
	sdev = qp->sdev;
	srdma_count(sdev, SRDMA_CNT_RX_PKTS);
	if (!local && !srdma_icrc_check(skb, payoff, udp_paylen, ipv6)) {
		srdma_count(sdev, SRDMA_CNT_RX_BAD_ICRC);
		goto drop_put;
	}
	if (!srdma_rcv_qp_pkt(qp, skb, &pkt, payoff + pkt.hdr_len, ipv6,
			      net_cookie))
		goto drop_put;
	srdma_qp_put(qp);
	consume_skb(skb);
	return res;

drop_put:
	srdma_qp_put(qp);
drop:
	kfree_skb(skb);
	return res;
}

/**
 * srdma_udp_encap_recv() - receive a datagram on a socket set's UDP socket
 * @sk: the socket, whose user data is its srdma_sockset
 * @skb: the datagram, consumed
 *
 * Context: Softirq (the UDP tunnel socket's encap_rcv).
 * Return: 0: the datagram was consumed, never handed back to UDP.
 */
int srdma_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct srdma_sockset *ss = rcu_dereference_sk_user_data(sk);

	switch (srdma_rcv(skb, sock_net(sk)->net_cookie, false)) {
	case SRDMA_RCV_NO_QP:
		if (ss)
			atomic64_inc(&ss->rx_dropped);
		break;
	case SRDMA_RCV_NO_GROUP:
		if (ss)
			atomic64_inc(&ss->rx_mcast_dropped);
		break;
	default:
		break;
	}
	return 0;
}

/*
 * A batch of @nsub packets, whose entries take @used bytes after the UDP
 * header (srdma_net.c): each packet is parsed from its entry as from the
 * wire, checked and handed on alone, to the QP its own header names
 * (looked up again when that changes). A malformed entry ends the batch:
 * nothing after it can be found. Consumes @skb.
 */
static void srdma_rcv_batch(struct sk_buff *skb, u64 net_cookie, u32 nsub,
			    u32 used)
{
	bool ipv6 = skb->protocol == htons(ETH_P_IPV6);
	int iplen = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u32 off, end, data, avail, payload, qpn = 0, i;
	struct srdma_qp *qp = NULL;
	struct srdma_batch_ent ent;
	struct srdma_pkt pkt;

	if (skb_transport_header(skb) - skb_network_header(skb) != iplen ||
	    skb_transport_offset(skb) < 0)
		goto out;
	off = skb_transport_offset(skb) + sizeof(struct udphdr);
	data = skb_headlen(skb);
	if (off > data || used > data - off)
		goto out;
	end = off + used;
	for (i = 0; i < nsub; i++) {
		if (end - off < sizeof(ent))
			break;
		memcpy(&ent, skb->data + off, sizeof(ent));
		off += sizeof(ent);
		avail = min3(ent.len, (u32)SRDMA_MAX_HDR_LEN, end - off);
		if (srdma_parse(skb->data + off, avail, ent.len, &pkt))
			break;
		off += pkt.hdr_len;
		if (ent.copied) {
			if (pkt.paylen > end - off)
				break;
			payload = off;
			off += pkt.paylen;
		} else {
			if (pkt.paylen > skb->len - data)
				break;
			payload = data;
			data += pkt.paylen;
		}
		if (pkt.dqpn == SRDMA_MCAST_QPN)
			continue;	/* never batched; never local */
		if (!qp || pkt.dqpn != qpn) {
			if (qp)
				srdma_qp_put(qp);
			qpn = pkt.dqpn;
			qp = srdma_rcv_qp(skb, ipv6, &pkt, net_cookie);
			if (!qp)
				continue;
		}
		srdma_count(qp->sdev, SRDMA_CNT_RX_PKTS);
		srdma_rcv_qp_pkt(qp, skb, &pkt, payload, ipv6, net_cookie);
	}
	/* Only srdma_batch_add() builds them: a bad entry is our bug. */
	WARN_ON_ONCE(i < nsub);
	if (qp)
		srdma_qp_put(qp);
out:
	consume_skb(skb);
}

/**
 * srdma_rcv_local() - receive a packet, or a batch, looped back on this host
 * @skb: what srdma_xmit() or srdma_batch_flush() queued, without an ICRC,
 *	 its cb a struct srdma_loop_cb; consumed
 *
 * Context: Softirq (srdma_net.c's local delivery tasklet).
 */
void srdma_rcv_local(struct sk_buff *skb)
{
	const struct srdma_loop_cb *cb = srdma_loop_cb(skb);

	if (cb->nsub)
		srdma_rcv_batch(skb, cb->net_cookie, cb->nsub, cb->used);
	else
		srdma_rcv(skb, cb->net_cookie, true);
}

/*
 * Direct local placement. A request between two RC QPs of one device
 * whose route ends on this host, with nothing of its QP unacknowledged
 * before it, small enough to be copied, sent by a process's doorbell:
 * instead of a packet through the delivery queue, the requester hands
 * the request's header fields and a copy of its payload straight to the
 * responder of the peer QP, under that QP's lock, and the responder's
 * answer (ACK or NAK, as srdma_send_ack() would have sent it) to the
 * requester's completer once the run is over (srdma_rcv_direct_ack()).
 * The responder runs exactly as for a packet: its checks of state, PSN,
 * R_Key, access and range, its placement, completions and events. Only
 * the sk_buff, the headers, the delivery queue and the tasklet are left
 * out, and the ACK's packet on its way back: a ping-pong's doorbell
 * returns with its WRITE placed and completed. perftest's 2-byte
 * latency in one guest fell from 20-21 us to under 12 (performance.rst).
 *
 * Order: nothing the requesting QP sent is still on its way, so no packet
 * of it can be overtaken: no request unacknowledged (its PSN is the
 * oldest), everything it queued for local delivery (its responder's
 * ACKs and READ responses too) received, no READ response or deferred
 * ACK waiting to go. Anything the peer sends back (older ACKs still
 * queued) is cumulative. The peer's lock is only tried, with the
 * requester's held: if it is taken, or anything else does not hold, the
 * request goes as a packet.
 *
 * Only in a ping-pong (the QP had a request lately, srdma_loop_pingpong()):
 * a one-way stream of small messages placed one by one made every post a
 * system call that returned with its message done, and 64-byte WRITE
 * rates fell to a quarter; as packets, the stream's delivery runs on
 * another CPU while the process posts ahead without doorbells.
 */
#define SRDMA_DIRECT_MAX	(SRDMA_ZCOPY_MIN - 1)

/* 0 turns direct placement off; read for each request. */
static unsigned int loop_direct = 1;
module_param(loop_direct, uint, 0644);
MODULE_PARM_DESC(loop_direct, "place small requests between RC QPs of this host without a packet: 1 on (default), 0 off");

/*
 * Per CPU, the buffer that holds the payload of the request being placed,
 * an skb because the responder copies from one. BHs are off while it is
 * used (the requester holds its QP lock); busy guards a nested placement.
 */
struct srdma_direct_buf {
	struct sk_buff *skb;
	bool busy;
};

static DEFINE_PER_CPU(struct srdma_direct_buf, srdma_direct_bufs);

/**
 * srdma_direct_init() - allocate the per-CPU payload buffers
 *
 * Context: Process context (module load).
 * Return: 0 or -ENOMEM.
 */
int srdma_direct_init(void)
{
	struct srdma_direct_buf *b;
	int cpu;

	for_each_possible_cpu(cpu) {
		b = per_cpu_ptr(&srdma_direct_bufs, cpu);
		b->skb = __alloc_skb(SRDMA_DIRECT_MAX, GFP_KERNEL, 0,
				     cpu_to_node(cpu));
		if (!b->skb) {
			srdma_direct_exit();
			return -ENOMEM;
		}
	}
	return 0;
}

/**
 * srdma_direct_exit() - free the per-CPU payload buffers
 *
 * Context: Process context (module unload or failed load), with no QP
 * left to send.
 */
void srdma_direct_exit(void)
{
	struct srdma_direct_buf *b;
	int cpu;

	for_each_possible_cpu(cpu) {
		b = per_cpu_ptr(&srdma_direct_bufs, cpu);
		consume_skb(b->skb);
		b->skb = NULL;
	}
}

/*
 * May @peer, found by @qp's destination QP number, take @qp's request
 * directly? An RC QP of the same device, not @qp itself, connected to
 * @qp (its QP number and the addresses both ways, as srdma_addr_ok()
 * checks a packet's), past INIT (in ERR its responder drops the
 * request, as a packet's). @peer's lock held.
 */
static bool srdma_direct_peer_ok(struct srdma_qp *qp, struct srdma_qp *peer)
{
	const struct srdma_av *a = &qp->av, *b = &peer->av;

	lockdep_assert_held(&peer->lock);
	if (peer->state == IB_QPS_RESET || peer->state == IB_QPS_INIT ||
	    peer->attr.dest_qp_num != qp->ibqp.qp_num || peer->direct_sink ||
	    a->ipv6 != b->ipv6)
		return false;
	if (!a->ipv6)
		return b->daddr.v4 == a->saddr.v4 && b->saddr.v4 == a->daddr.v4;
	return ipv6_addr_equal(&b->daddr.v6, &a->saddr.v6) &&
	       ipv6_addr_equal(&b->saddr.v6, &a->daddr.v6);
}

/**
 * srdma_rcv_direct() - place a request of @qp at its peer without a packet
 * @qp: the requesting QP
 * @pkt: the request's header fields, pkt->paylen bytes of payload
 * @src: where the payload comes from
 *
 * See "Direct local placement" above.
 *
 * Context: Requester, QP lock held (BHs off).
 * Return: 0 if placed (the peer's answer waits in qp->direct_ack); the
 * payload's error (-EACCES, -EINVAL, -EAGAIN), as srdma_data_xmit();
 * -EOPNOTSUPP if the request must go as a packet.
 */
int srdma_rcv_direct(struct srdma_qp *qp, struct srdma_pkt *pkt,
		     const struct srdma_payload_src *src)
{
	struct srdma_direct_buf *b = this_cpu_ptr(&srdma_direct_bufs);
	struct srdma_qp *peer;
	u8 *payload;
	int err;

	lockdep_assert_held(&qp->lock);
	if (!READ_ONCE(loop_direct) || !qp->direct_run ||
	    qp->direct_ack.valid || !READ_ONCE(qp->dst_local) ||
	    qp->ibqp.qp_type != IB_QPT_RC ||
	    !(srdma_op_flags(pkt->opcode) & SRDMA_F_REQ) ||
	    pkt->paylen > SRDMA_DIRECT_MAX ||
	    pkt->psn != qp->una_psn || qp->batch || qp->train ||
	    !srdma_loop_delivered(qp) || qp->ack_deferred ||
	    srdma_rd_queued(qp) || !srdma_loop_pingpong(qp) ||
	    !b->skb || b->busy ||
	    !srdma_route_local(qp))
		return -EOPNOTSUPP;
	peer = srdma_qp_get(qp->attr.dest_qp_num);
	if (!peer)
		return -EOPNOTSUPP;
	if (peer == qp || peer->sdev != qp->sdev ||
	    peer->ibqp.qp_type != IB_QPT_RC) {
		srdma_qp_put(peer);
		return -EOPNOTSUPP;
	}
	/* Only tried: the peer's requester may be waiting for ours. */
	if (!spin_trylock(&peer->lock)) {
		srdma_qp_put(peer);
		return -EOPNOTSUPP;
	}
	if (!srdma_direct_peer_ok(qp, peer)) {
		err = -EOPNOTSUPP;
		goto out_unlock;
	}
	b->busy = true;
	skb_trim(b->skb, 0);
	payload = skb_put(b->skb, pkt->paylen);
	err = srdma_payload_fill(qp, src, NULL, payload, pkt->paylen);
	if (err)
		goto out_idle;
	/* As srdma_parse() would have read them from the packet. */
	pkt->flags = srdma_op_flags(pkt->opcode);
	pkt->hdr_len = srdma_hdr_len(pkt->opcode);
	pkt->pkey = SRDMA_DEFAULT_PKEY;
	pkt->pad = 0;
	srdma_count(qp->sdev, SRDMA_CNT_TX_PKTS);
	srdma_count(qp->sdev, SRDMA_CNT_TX_DIRECT);
	srdma_count(peer->sdev, SRDMA_CNT_RX_PKTS);
	qp->direct_placed = true;
	peer->direct_sink = &qp->direct_ack;
	srdma_resp_rcv(peer, pkt, b->skb, 0);
	peer->direct_sink = NULL;
out_idle:
	b->busy = false;
out_unlock:
	spin_unlock(&peer->lock);
	srdma_qp_put(peer);
	return err;
}

/**
 * srdma_rcv_direct_ack() - hand the completer the answer a direct
 * placement got, if any
 * @qp: the requesting QP, its run over
 *
 * As if the peer's ACK or NAK had arrived: credits, completions, the
 * window, and a run of the requester for what it allows.
 *
 * Context: QP lock held (BHs off).
 */
void srdma_rcv_direct_ack(struct srdma_qp *qp)
{
	struct srdma_pkt ack = {
		.opcode = SRDMA_OP_ACK,
		.pkey = SRDMA_DEFAULT_PKEY,
		.dqpn = qp->ibqp.qp_num,
	};

	lockdep_assert_held(&qp->lock);
	if (!qp->direct_ack.valid)
		return;
	qp->direct_ack.valid = false;
	ack.flags = srdma_op_flags(ack.opcode);
	ack.hdr_len = srdma_hdr_len(ack.opcode);
	ack.psn = qp->direct_ack.psn;
	ack.msn = qp->direct_ack.msn;
	ack.syndrome = qp->direct_ack.syndrome;
	srdma_comp_rcv(qp, &ack, NULL, 0);
}
