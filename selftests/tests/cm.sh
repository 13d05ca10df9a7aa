#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdma_cm over the GSI QP (QP1), srdma0 to itself in one guest: the CM
# MADs loop back through srdma's local delivery. The tests across two
# guests, against rdma_rxe too, are in wire/peer.sh.

cm_setup() {
	modprobe rdma_ucm && modprobe ib_umad || return 1
	setup_bound_veth
}

# No QP, MR or cm_id left but the MAD layer's own QP1.
cm_nothing_left() {
	local n
	n=$(rdma resource show qp link srdma0/1 | grep -vc 'lqpn 1 ')
	[ "$n" = 0 ] || { rdma resource show qp; return 1; }
	[ -z "$(rdma resource show mr)" ] || { rdma resource show mr; return 1; }
	[ -z "$(rdma resource show cm_id)" ] ||
		{ rdma resource show cm_id; return 1; }
}

test_cm_gsi_qp() {
	cm_setup || fail "setup"
	# The MAD layer opened QP1 on the device.
	rdma resource show qp link srdma0/1 | grep -q 'lqpn 1 type GSI' ||
		fail "no GSI QP: $(rdma resource show qp)"
	[ -e /dev/infiniband/rdma_cm ] || fail "no rdma_cm device"
	ls /sys/class/infiniband_mad/ | grep -q umad || fail "no umad device"
}

test_cm_rping() {
	cm_setup || fail "setup"
	client_server "rping -s -a 10.0.0.1 -C 10 -V -S 1000" \
		"rping -c -a 10.0.0.1 -C 10 -V -v -S 1000" 120 || fail "rping"
	[ "$(grep -c 'ping data: rdma-ping-' /tmp/client.log)" = 10 ] ||
		fail "10 pings verified"
	wait_for 10 cm_nothing_left || fail "resources left"
}

test_cm_ucmatose() {
	cm_setup || fail "setup"
	client_server "ucmatose -b 10.0.0.1 -c 2 -C 20 -S 1000" \
		"ucmatose -s 10.0.0.1 -c 2 -C 20 -S 1000" 120 || fail "ucmatose"
	grep -q 'data transfers complete' /tmp/client.log || fail "transfers"
	wait_for 10 cm_nothing_left || fail "resources left"
}

test_cm_udaddy() {
	cm_setup || fail "setup"
	client_server "udaddy -b 10.0.0.1 -c 2 -C 20 -S 500" \
		"udaddy -s 10.0.0.1 -c 2 -C 20 -S 500" 120 || fail "udaddy"
	grep -q 'data transfers complete' /tmp/client.log || fail "transfers"
	[ "$(counter rx_qkey_violations)" = 0 ] || fail "Q_Key violations"
	wait_for 10 cm_nothing_left || fail "resources left"
}

# perftest connected through rdma_cm (-R).
test_cm_perftest() {
	local t
	cm_setup || fail "setup"
	for t in "ib_write_bw -s 65536 -n 50" "ib_read_bw -s 65536 -n 50" \
		 "ib_send_lat -s 2 -n 100"; do
		client_server "$t -R -d srdma0 -p 18515" \
			"$t -R -d srdma0 -p 18515 10.0.0.1" 120 || fail "$t -R"
	done
	wait_for 10 cm_nothing_left || fail "resources left"
}

# perftest over UD QPs (addresses exchanged over TCP).
test_ud_perftest() {
	local t gidx
	setup_bound_veth || fail "link add"
	gidx=$(roce2_ipv4_gid srdma0) || fail "no GID"
	for t in "ib_send_bw -s 1024 -n 200" "ib_send_lat -s 1024 -n 100"; do
		client_server "$t -c UD -d srdma0 -x $gidx -p 18516" \
			"$t -c UD -d srdma0 -x $gidx -p 18516 127.0.0.1" 120 ||
			fail "$t -c UD"
	done
}
