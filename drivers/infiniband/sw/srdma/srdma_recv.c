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
