/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * srdma: a software RDMA device speaking RoCEv2 over any Ethernet netdev.
 *
 * Core objects and helpers shared by every file of the driver.
 */
#ifndef SRDMA_H
#define SRDMA_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/refcount.h>
#include <linux/atomic.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/srdma-abi.h>

#define SRDMA_UDP_PORT		4791
#define SRDMA_GID_TBL_LEN	128
#define SRDMA_FW_VER		((u64)0 << 32 | 1 << 16 | 0)

/*
 * The UDP sockets (IPv4 and IPv6, port 4791) of one network namespace,
 * shared by every srdma device whose netdev lives there.
 */
struct srdma_sockset {
	struct list_head list;		/* on srdma_socksets, srdma_net_mutex */
	refcount_t refcnt;		/* one per device using it */
	struct net *net;		/* not a counted reference, see net.c */
	struct socket *sk4;		/* NULL once the namespace is gone */
	struct socket *sk6;		/* NULL if IPv6 is unavailable */
	atomic64_t rx_dropped;		/* packets the stub receive dropped */
};

struct srdma_dev {
	struct ib_device ibdev;
	struct net_device *ndev;	/* counted, see ndev_tracker */
	netdevice_tracker ndev_tracker;
	struct srdma_sockset *sockset;	/* counted reference */
	struct list_head list;		/* on srdma_dev_list, srdma_dev_mutex */
	/*
	 * Set under srdma_dev_mutex once the netdev started unregistering;
	 * a registration that races with it then removes the device itself.
	 */
	bool ndev_gone;
	bool registered;		/* ib_register_device() succeeded */
};

struct srdma_ucontext {
	struct ib_ucontext ibuc;
};

static inline struct srdma_dev *to_sdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct srdma_dev, ibdev);
}

static inline struct srdma_ucontext *to_suc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct srdma_ucontext, ibuc);
}

#define srdma_err(sdev, fmt, ...) \
	ibdev_err_ratelimited(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define srdma_warn(sdev, fmt, ...) \
	ibdev_warn_ratelimited(&(sdev)->ibdev, fmt, ##__VA_ARGS__)
#define srdma_dbg(sdev, fmt, ...) \
	ibdev_dbg(&(sdev)->ibdev, fmt, ##__VA_ARGS__)

/* srdma_net.c */
int srdma_net_init(void);
void srdma_net_exit(void);
struct srdma_sockset *srdma_sockset_get(struct net *net);
void srdma_sockset_put(struct srdma_sockset *ss);

/* srdma_recv.c */
int srdma_udp_encap_recv(struct sock *sk, struct sk_buff *skb);

/* srdma_main.c */
void srdma_dealloc_driver(struct ib_device *ibdev);

/* srdma_verbs.c */
void srdma_init_device(struct srdma_dev *sdev);
int srdma_register_device(struct srdma_dev *sdev, const char *name);
enum ib_port_state srdma_port_state(struct srdma_dev *sdev);

#endif /* SRDMA_H */
