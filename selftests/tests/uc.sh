#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# UC QPs: ibv_uc_pingpong on srdma0 to itself and between srdma and
# rdma_rxe in one guest (rxe holds UDP 4791 in init_net, so srdma's netdev
# goes to netns ns1), and srdma_uc_loss across a veth pair with and
# without netem loss (pair_setup and netem come from loss.sh). The
# functional UC and inline cases are srdma_inline_test's (run.sh).

test_uc_pingpong() {
	setup_bound_veth || fail "link add"
	local g
	g=$(roce2_ipv4_gid srdma0) || fail "no GID"
	client_server "ibv_uc_pingpong -d srdma0 -g $g -n 500 -s 4096" \
		"ibv_uc_pingpong -d srdma0 -g $g -n 500 -s 4096 127.0.0.1" ||
		fail "ibv_uc_pingpong"
	grep -q '4096000 bytes in' /tmp/client.log || fail "byte count"
	[ "$(counter rx_uc_msg_dropped)" = 0 ] || fail "messages dropped"
	[ "$(counter rx_out_of_sequence)" = 0 ] || fail "PSN gaps"
}

# Run SERVER in namespace SNS (or "" for init_net) until it listens on
# TCP 18515, then CLIENT in CNS; both must exit 0.
# usage: uc_ns_client_server SNS SERVER CNS CLIENT
uc_ns_client_server() {
	local sns=$1 srv=$2 cns=$3 cli=$4 spid rc=0 i
	local sx=${sns:+ip netns exec $sns} cx=${cns:+ip netns exec $cns}
	timeout 120 $sx $srv > /tmp/server.log 2>&1 &
	spid=$!
	for ((i = 0; i < 300; i++)); do
		$sx ss -Hltn | grep -q ':18515 ' && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	timeout 120 $cx $cli > /tmp/client.log 2>&1 || rc=$?
	wait "$spid" || { echo "server failed:"; cat /tmp/server.log; rc=1; }
	cat /tmp/client.log
	return $rc
}

# srdma0 on v1 in ns1 (10.0.0.2), rxe0 on v0 in init_net (10.0.0.1).
uc_rxe_setup() {
	modprobe rdma_rxe 2>/dev/null || return 4
	modprobe srdma && veth_netns_pair || return 1
	rdma link add rxe0 type rxe netdev v0 || return 1
	ip netns exec ns1 rdma link add srdma0 type srdma netdev v1
}

test_uc_pingpong_rxe() {
	local rc gr gs
	uc_rxe_setup
	rc=$?
	[ $rc = 4 ] && return 4
	[ $rc = 0 ] || fail "setup"
	gr=$(roce2_ipv4_gid rxe0) && gs=$(roce2_ipv4_gid srdma0) ||
		fail "no GID"
	# rxe serves, srdma connects; then the other way round.
	uc_ns_client_server "" "ibv_uc_pingpong -d rxe0 -g $gr -n 300 -s 4096" \
		ns1 "ibv_uc_pingpong -d srdma0 -g $gs -n 300 -s 4096 10.0.0.1" ||
		fail "srdma -> rxe"
	grep -q '2457600 bytes in' /tmp/client.log || fail "byte count (srdma client)"
	uc_ns_client_server ns1 "ibv_uc_pingpong -d srdma0 -g $gs -n 300 -s 5000" \
		"" "ibv_uc_pingpong -d rxe0 -g $gr -n 300 -s 5000 10.0.0.2" ||
		fail "rxe -> srdma"
	grep -q '3000000 bytes in' /tmp/client.log || fail "byte count (rxe client)"
	local drops
	drops=$(counter rx_uc_msg_dropped srdma0)
	[ -z "$drops" ] && drops=$(ip netns exec ns1 rdma statistic show link srdma0/1 |
		grep -oE 'rx_uc_msg_dropped [0-9]+' | awk '{print $2}')
	[ "$drops" = 0 ] || fail "srdma dropped $drops messages"
}

# uc_loss_report: where packets went, for a failed run.
uc_loss_report() {
	rdma statistic show link srdma0/1
	ip netns exec ns1 rdma statistic show link srdma1/1
	ip -s link show v0
	ip netns exec ns1 ip -s link show v1
	cat /proc/net/softnet_stat
}

test_uc_loss_none() {
	pair_setup || fail "setup"
	timeout 300 srdma_uc_loss -d srdma0 -D srdma1 -n 1000 ||
		{ uc_loss_report; fail "UC without loss"; }
}

test_uc_loss_5pct() {
	pair_setup && netem loss 5% || fail "setup"
	timeout 300 srdma_uc_loss -d srdma0 -D srdma1 -n 2000 -l ||
		fail "UC under 5% loss"
}

test_uc_loss_reorder() {
	pair_setup && netem delay 1ms reorder 30% 50% || fail "setup"
	# UC drops a message that any packet overtook, and a late packet:
	# most messages go; what arrives must still be whole and in order.
	timeout 300 srdma_uc_loss -d srdma0 -D srdma1 -n 1000 -l -p 10 ||
		fail "UC with reordering"
}
