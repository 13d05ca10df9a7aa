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

# QPNs are module-wide, so a UD datagram must also come to its QP's own
# device: srdma0 on v0 (10.0.0.1) and srdma1 on v2 (10.0.2.1), a UD QP
# on srdma1 with a receive posted, and crafted UD SEND ONLY datagrams
# (ICRC and all; selftests/ud_wrong_dev.py) naming that QP: one sent to
# 10.0.0.1 from a raw socket (through lo), and one to 10.0.2.1 but as a
# frame in through v0 (from v1), must not complete, and srdma1's
# rx_bad_header must rise by exactly 2; one to 10.0.2.1 in through v2
# (from v3) must complete, every completion field and the bytes checked.
# Before, the first one completed; with a check of the address alone, the
# second one did. Then what an ordinary socket of an unprivileged process
# sends through lo (to 10.0.2.1 from 10.0.2.1) must be dropped, for the
# UD QP (rx_bad_header +1, 3 in all) and for QP1 (a MAD with the
# privileged Q_Key), and QP1 must take a MAD to 10.0.2.1 only in through
# v2, not v0 (helper-78: both reached it before).
test_ud_wrong_device() {
	local h0
	setup_bound_veth || fail "link add"
	ip link add v2 type veth peer name v3 && ip addr add 10.0.2.1/24 dev v2 &&
		ip link set v2 up && ip link set v3 up || fail "v2"
	rdma link add srdma1 type srdma netdev v2 || fail "link add srdma1"
	wait_for 5 roce2_ipv4_gid srdma1 || fail "no IPv4 GID on srdma1"
	wait_for 5 carrier_up v2 || fail "v2 has no carrier"
	h0=$(counter rx_bad_header srdma1)
	timeout 60 /usr/bin/python3 "$SRDMA_ROOT/selftests/ud_wrong_dev.py" \
		srdma1 10.0.2.1 v2 10.0.0.1 v0 || fail "ud_wrong_dev.py"
	[ "$(counter rx_bad_header srdma1)" = $((h0 + 3)) ] ||
		fail "rx_bad_header $h0 -> $(counter rx_bad_header srdma1), want +3"
}
