#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# XRC through the stock tool, ibv_xsrq_pingpong: a server with two clients
# in one guest. The tool opens its XRC domain through /tmp/xrc_domain, so
# all three share one domain; the server sends each client's messages to
# that client's XRC SRQ round robin through both clients' receive QPs.
# 4 KiB messages at a 1 KiB path MTU (4 packets each). The kernel side is
# srdma_xrc_test's (run.sh).

XSRQ_PP="ibv_xsrq_pingpong -n 50 -s 4096 -m 1024"

# xsrq_check LOG: the tool's own verdict, and no complaint.
xsrq_check() {
	grep -qx success "$1" && ! grep -qi 'error\|failed\|couldn' "$1" ||
		{ cat "$1"; return 1; }
}

test_xsrq_pingpong() {
	local g before
	setup_bound_veth || fail "link add"
	g=$(roce2_ipv4_gid srdma0) || fail "no IPv4 GID"
	before=$(counter rx_packets)
	rm -f /tmp/xrc_domain
	client_server "$XSRQ_PP -d srdma0 -g $g -c 2" \
		"$XSRQ_PP -d srdma0 -g $g -o 127.0.0.1 > /tmp/client2.log 2>&1 & p=\$!
		 $XSRQ_PP -d srdma0 -g $g 127.0.0.1; r=\$?; wait \$p && exit \$r" ||
		fail "ibv_xsrq_pingpong"
	xsrq_check /tmp/server.log || fail "server report"
	xsrq_check /tmp/client.log || fail "client report"
	xsrq_check /tmp/client2.log || fail "client (ODP) report"
	# 200 messages of 4 packets, each packet seen once in loopback.
	[ $(($(counter rx_packets) - before)) -ge 800 ] ||
		fail "only $(($(counter rx_packets) - before)) packets"
	[ "$(counter remote_access_errors)" = 0 ] || fail "remote access errors"
	rm -f /tmp/xrc_domain
}
