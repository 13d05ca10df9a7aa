#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Shared receive queues through the stock tool (ibv_srq_pingpong, 8 QPs on
# one SRQ per side, buffers validated with -c): srdma0 to itself, and
# srdma against rdma_rxe in one guest both ways. rdma_rxe holds UDP 4791
# in init_net, so srdma0 sits on v1 in ns1 (10.0.0.2) and rxe0 on v0
# (10.0.0.1). The SRQ verbs themselves are tested by srdma_srq_test.

SRQ_PP="ibv_srq_pingpong -n 100 -q 8 -r 64 -s 2048 -c"

srq_pp_check() {	# srq_pp_check LOG
	grep -qE '^[0-9]+ iters in' "$1" || { cat "$1"; return 1; }
	grep -qE '^[0-9]+ bytes in' "$1" || { cat "$1"; return 1; }
	! grep -qi 'error\|failed\|mismatch' "$1" || { cat "$1"; return 1; }
}

test_srq_pingpong() {
	local g
	setup_bound_veth || fail "link add"
	g=$(roce2_ipv4_gid srdma0) || fail "no IPv4 GID"
	client_server "$SRQ_PP -d srdma0 -g $g" \
		"$SRQ_PP -d srdma0 -g $g 127.0.0.1" || fail "ibv_srq_pingpong"
	srq_pp_check /tmp/client.log || fail "client report"
	srq_pp_check /tmp/server.log || fail "server report"
	[ "$(counter rx_bad_icrc)" = 0 ] || fail "ICRC errors"
}

# srdma0 in ns1 on v1, rxe0 in init_net on v0.
srq_rxe_setup() {
	modprobe rdma_rxe 2>/dev/null || return 4
	modprobe srdma && veth_netns_pair || return 1
	ip netns exec ns1 rdma link add srdma0 type srdma netdev v1 || return 1
	rdma link add rxe0 type rxe netdev v0 || return 1
	wait_for 5 ip netns exec ns1 ping -c 1 -W 1 10.0.0.1
}

# rxe0 serves (its listener is in this namespace), srdma0 connects.
test_srq_pingpong_rxe_server() {
	local gs gr rc=0
	srq_rxe_setup || { rc=$?; [ $rc = 4 ] && exit 4; fail "setup"; }
	gs=$(roce2_ipv4_gid srdma0) || fail "no srdma0 GID"
	gr=$(roce2_ipv4_gid rxe0) || fail "no rxe0 GID"
	client_server "$SRQ_PP -d rxe0 -g $gr" \
		"ip netns exec ns1 $SRQ_PP -d srdma0 -g $gs 10.0.0.1" ||
		fail "ibv_srq_pingpong srdma -> rxe"
	srq_pp_check /tmp/client.log || fail "srdma client report"
	srq_pp_check /tmp/server.log || fail "rxe server report"
	[ "$(counter rx_bad_icrc)" = 0 ] || fail "ICRC errors"
	rdma link delete rxe0
}

# srdma0 serves in ns1, rxe0 connects; the listener is in ns1, where
# client_server does not look for it: wait for it here.
test_srq_pingpong_srdma_server() {
	local gs gr rc=0 spid
	srq_rxe_setup || { rc=$?; [ $rc = 4 ] && exit 4; fail "setup"; }
	gs=$(roce2_ipv4_gid srdma0) || fail "no srdma0 GID"
	gr=$(roce2_ipv4_gid rxe0) || fail "no rxe0 GID"
	timeout 120 ip netns exec ns1 $SRQ_PP -d srdma0 -g "$gs" \
		> /tmp/server.log 2>&1 &
	spid=$!
	wait_for 30 sh -c "ip netns exec ns1 ss -Hltn | grep -q ':18515 '" ||
		fail "no listener: $(cat /tmp/server.log)"
	timeout 120 $SRQ_PP -d rxe0 -g "$gr" 10.0.0.2 > /tmp/client.log 2>&1 ||
		rc=$?
	wait $spid || { cat /tmp/server.log; fail "srdma server"; }
	[ $rc = 0 ] || { cat /tmp/client.log; fail "rxe client"; }
	srq_pp_check /tmp/client.log || fail "rxe client report"
	srq_pp_check /tmp/server.log || fail "srdma server report"
	rdma link delete rxe0
}

# A kernel consumer (selftests/kmod/srdma_srq_ktest.ko): the SRQ verbs,
# completions, limit event, RNR and Last WQE Reached, posted from kernel
# space (also with IRQs off). The module checks at load time and fails
# the load on any failure, logging each.
test_srq_kernel() {
	ktest_module srdma_srq_ktest
}

# The device goes away (rdma link delete, then rmmod) under processes
# with SRQs: one waiting for its peer, two exchanging messages.
test_srq_device_removal() {
	local g p1 p2 p3
	setup_bound_veth || fail "link add"
	g=$(roce2_ipv4_gid srdma0) || fail "no IPv4 GID"
	ibv_srq_pingpong -d srdma0 -g "$g" -p 18600 -q 4 > /tmp/idle.log 2>&1 &
	p1=$!
	ibv_srq_pingpong -d srdma0 -g "$g" -n 1000000 -q 4 > /tmp/server.log 2>&1 &
	p2=$!
	wait_for 30 sh -c "ss -Hltn | grep -q ':18515 '" || fail "no listener"
	ibv_srq_pingpong -d srdma0 -g "$g" -n 1000000 -q 4 127.0.0.1 \
		> /tmp/client.log 2>&1 &
	p3=$!
	sleep 3
	kill -0 $p2 && kill -0 $p3 || fail "pingpong ended early: $(cat /tmp/client.log)"
	[ "$(rdma resource show srq 2>/dev/null | grep -c srdma0)" -ge 3 ] ||
		echo "# rdma resource show srq: $(rdma resource show srq 2>&1 | head -3)"
	rdma link delete srdma0 || fail "link delete with SRQs in use"
	wait_for 10 dev_absent srdma0 || fail "srdma0 still present"
	kill $p1 $p2 $p3 2>/dev/null
	wait $p1 $p2 $p3 2>/dev/null
	rmmod srdma || fail "rmmod after the device went"
}
