// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma receive path: the UDP tunnel socket's encap_rcv hook, called in
 * softirq context for every datagram to port 4791. It validates the
 * packet (headers, ICRC, QP, addresses), then hands it to the responder
 * (requests) or the completer (ACKs and READ responses) of its QP.
 */
#include <linux/skbuff.h>
#include <net/ip.h>
#include <net/ipv6.h>
#include <net/sock.h>
#include <net/udp_tunnel.h>

#include "srdma.h"

static u32 srdma_skb_crc(struct sk_buff *skb, int off, u32 len, u32 crc)
{
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *data;

	skb_prepare_seq_read(skb, off, off + len, &st);
	while (done < len && (n = skb_seq_read(done, &data, &st)) != 0) {
		/* A block may run past the end of the range asked for. */
		n = min(n, len - done);
		crc = srdma_crc32(crc, data, n);
		done += n;
	}
	skb_abort_seq_read(&st);
	return crc;
}

/* Check the ICRC of the datagram whose UDP payload starts at @payoff. */
static bool srdma_icrc_ok(struct sk_buff *skb, int payoff, u32 udp_paylen,
			  bool ipv6)
{
	u8 hdrs[sizeof(struct ipv6hdr) + sizeof(struct udphdr) +
		SRDMA_BTH_LEN];
	u32 iplen = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	u8 icrc[SRDMA_ICRC_LEN];
	u32 crc;

	memcpy(hdrs, skb_network_header(skb), iplen);
	memcpy(hdrs + iplen, skb_transport_header(skb), sizeof(struct udphdr));
	if (skb_copy_bits(skb, payoff, hdrs + iplen + sizeof(struct udphdr),
			  SRDMA_BTH_LEN))
		return false;
	crc = srdma_icrc_hdrs(hdrs, iplen + sizeof(struct udphdr) +
			      SRDMA_BTH_LEN, ipv6);
	crc = srdma_skb_crc(skb, payoff + SRDMA_BTH_LEN,
			    udp_paylen - SRDMA_BTH_LEN - SRDMA_ICRC_LEN, crc);
	if (skb_copy_bits(skb, payoff + udp_paylen - SRDMA_ICRC_LEN, icrc,
			  SRDMA_ICRC_LEN))
		return false;
	return srdma_icrc_load(icrc) == crc;
}

/* The packet must come from the QP's peer, to the QP's own address. */
static bool srdma_addr_ok(struct srdma_qp *qp, struct sk_buff *skb, bool ipv6)
{
	if (ipv6 != qp->ipv6)
		return false;
	if (!ipv6)
		return ip_hdr(skb)->saddr == qp->daddr.v4 &&
		       ip_hdr(skb)->daddr == qp->saddr.v4;
	return ipv6_addr_equal(&ipv6_hdr(skb)->saddr, &qp->daddr.v6) &&
	       ipv6_addr_equal(&ipv6_hdr(skb)->daddr, &qp->saddr.v6);
}

int srdma_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct srdma_sockset *ss = rcu_dereference_sk_user_data(sk);
	u8 buf[SRDMA_MAX_HDR_LEN];
	struct srdma_pkt pkt;
	struct srdma_qp *qp;
	struct srdma_dev *sdev;
	u32 udp_paylen, avail;
	const u8 *hdr;
	bool ipv6;
	int payoff, iplen;

	ipv6 = skb->protocol == htons(ETH_P_IPV6);
	iplen = ipv6 ? sizeof(struct ipv6hdr) : sizeof(struct iphdr);
	/* No IP options or IPv6 extension headers in RoCEv2. */
	if (skb_transport_header(skb) - skb_network_header(skb) != iplen)
		goto drop;
	payoff = skb_transport_offset(skb) + sizeof(struct udphdr);
	udp_paylen = ntohs(udp_hdr(skb)->len);
	if (udp_paylen < sizeof(struct udphdr))
		goto drop;
	udp_paylen -= sizeof(struct udphdr);
	if (payoff < 0 || (u32)payoff + udp_paylen > skb->len)
		goto drop;

	avail = min_t(u32, udp_paylen, SRDMA_MAX_HDR_LEN);
	hdr = skb_header_pointer(skb, payoff, avail, buf);
	if (!hdr || srdma_parse(hdr, avail, udp_paylen, &pkt))
		goto drop;

	qp = srdma_qp_get(pkt.dqpn);
	if (!qp)
		goto drop;
	sdev = qp->sdev;
	srdma_count(sdev, SRDMA_CNT_RX_PKTS);
	if (!srdma_icrc_ok(skb, payoff, udp_paylen, ipv6)) {
		srdma_count(sdev, SRDMA_CNT_RX_BAD_ICRC);
		goto drop_put;
	}
	if ((pkt.pkey & 0x7fff) != 0x7fff || !srdma_addr_ok(qp, skb, ipv6)) {
		srdma_count(sdev, SRDMA_CNT_RX_BAD_HDR);
		goto drop_put;
	}

	if (pkt.flags & SRDMA_F_REQ)
		srdma_resp_rcv(qp, &pkt, skb, payoff + pkt.hdr_len);
	else
		srdma_comp_rcv(qp, &pkt, skb, payoff + pkt.hdr_len);
	srdma_qp_put(qp);
	consume_skb(skb);
	return 0;

drop_put:
	srdma_qp_put(qp);
drop:
	if (ss)
		atomic64_inc(&ss->rx_dropped);
	kfree_skb(skb);
	return 0;
}
