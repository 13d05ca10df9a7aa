// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * srdma network glue: the per-namespace UDP 4791 sockets.
 *
 * Kernel sockets hold no reference on their namespace, and an srdma device
 * may outlive the namespace of its netdev by a little (its unregistration is
 * queued). So the sockets of a namespace are released from our pernet exit
 * hook, and a socket set left behind only keeps its (NULL) pointers until
 * the last device drops it.
 */
#include <linux/module.h>
#include <net/udp_tunnel.h>
#include <net/netns/generic.h>

#include "srdma.h"

/* Guards srdma_socksets and the sk4/sk6/net fields of every set on it. */
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
	tcfg.encap_type = 1;
	tcfg.encap_rcv = srdma_udp_encap_recv;
	setup_udp_tunnel_sock(net, sock, &tcfg);
	return sock;
}

static void srdma_sockset_close(struct srdma_sockset *ss)
{
	lockdep_assert_held(&srdma_net_mutex);
	if (ss->sk6)
		udp_tunnel_sock_release(ss->sk6);
	if (ss->sk4)
		udp_tunnel_sock_release(ss->sk4);
	ss->sk4 = NULL;
	ss->sk6 = NULL;
}

/*
 * Return the socket set of @net, creating and binding its sockets on first
 * use. Fails with -EADDRINUSE when another user (such as rdma_rxe, which
 * binds 4791 in init_net as soon as it loads) holds the port.
 */
struct srdma_sockset *srdma_sockset_get(struct net *net)
{
	struct srdma_sockset *ss;
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

	ss->sk4 = srdma_udp_open(net, ss, false, &err);
	if (!ss->sk4) {
		pr_err("srdma: cannot bind UDP port %u for IPv4: %d%s\n",
		       SRDMA_UDP_PORT, err,
		       err == -EADDRINUSE ?
		       " (port taken, is rdma_rxe loaded in this namespace?)" :
		       "");
		goto err_free_set;
	}
	ss->sk6 = srdma_udp_open(net, ss, true, &err);
	if (!ss->sk6) {
		if (err != -EAFNOSUPPORT) {
			pr_err("srdma: cannot bind UDP port %u for IPv6: %d\n",
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
		list_del(&ss->list);
		ss->net = NULL;
	}
	mutex_unlock(&srdma_net_mutex);
}

static struct pernet_operations srdma_net_ops = {
	.exit = srdma_net_ns_exit,
};

int srdma_net_init(void)
{
	return register_pernet_subsys(&srdma_net_ops);
}

void srdma_net_exit(void)
{
	unregister_pernet_subsys(&srdma_net_ops);
}
