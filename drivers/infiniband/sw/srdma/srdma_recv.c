// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma receive path: the UDP tunnel socket's encap_rcv hook, called in
 * softirq context for every datagram to port 4791.
 */
#include <linux/skbuff.h>
#include <net/sock.h>
#include <net/udp_tunnel.h>

#include "srdma.h"

int srdma_udp_encap_recv(struct sock *sk, struct sk_buff *skb)
{
	struct srdma_sockset *ss;

	rcu_read_lock_bh();
	ss = rcu_dereference_sk_user_data(sk);
	if (ss)
		atomic64_inc(&ss->rx_dropped);
	rcu_read_unlock_bh();

	/* No transport yet: every packet is consumed and dropped. */
	kfree_skb(skb);
	return 0;
}
