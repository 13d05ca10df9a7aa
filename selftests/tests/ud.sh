#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# UD through the stock tool, srdma0 to itself in one guest (loopback to
# its own GID). The port MTU is 1024 at netdev MTU 1500, and
# ibv_ud_pingpong refuses messages larger than that.

test_ud_pingpong() {
	setup_bound_veth || fail "link add"
	client_server "ibv_ud_pingpong -d srdma0 -g 1 -n 100 -s 1024" \
		"ibv_ud_pingpong -d srdma0 -g 1 -n 100 -s 1024 127.0.0.1" ||
		fail "ibv_ud_pingpong"
	grep -q '204800 bytes in' /tmp/client.log || fail "byte count"
	[ "$(counter rx_qkey_violations)" = 0 ] || fail "Q_Key violations"
	[ "$(counter rx_ud_no_receive)" = 0 ] || fail "datagrams dropped"
}

test_ud_pingpong_small() {
	setup_bound_veth || fail "link add"
	client_server "ibv_ud_pingpong -d srdma0 -g 1 -n 50 -s 1 -e" \
		"ibv_ud_pingpong -d srdma0 -g 1 -n 50 -s 1 -e 127.0.0.1" ||
		fail "ibv_ud_pingpong -s 1 -e"
	grep -q '100 bytes in' /tmp/client.log || fail "byte count"
}
