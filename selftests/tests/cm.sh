#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdma_cm over the GSI QP (QP1), srdma0 to itself in one guest: the CM
# MADs loop back through srdma's local delivery. The tests across two
# guests, against rdma_rxe too, are in wire/peer.sh.

cm_setup() {
	modprobe rdma_ucm || return 1
	modprobe ib_umad 2>/dev/null	# built in, or absent, on the debug kernel
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
	if modinfo ib_umad > /dev/null 2>&1; then
		ls /sys/class/infiniband_mad/ | grep -q umad ||
			fail "no umad device"
	fi
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

# perftest connected through rdma_cm (-R), its client held back and run
# again when it loses perftest's own connect race (lib.sh's
# perftest_cm_race).
test_cm_perftest() {
	local t try rc
	cm_setup || fail "setup"
	for t in "ib_write_bw -s 65536 -n 50" "ib_read_bw -s 65536 -n 50" \
		 "ib_send_lat -s 2 -n 100"; do
		for try in 1 2 3; do
			rc=0
			client_server "$t -R -F -d srdma0 -p 18515" \
				"LD_PRELOAD=$PERFTEST_CM_DELAY $t -R -F -d srdma0 -p 18515 10.0.0.1" \
				120 || rc=$?
			[ $rc != 0 ] && [ $try -lt 3 ] &&
				perftest_cm_race "${t%% *}_R" $rc || break
		done
		[ $rc = 0 ] || fail "$t -R"
	done
	wait_for 10 cm_nothing_left || fail "resources left"
}

# perftest over UD QPs (addresses exchanged over TCP).
test_ud_perftest() {
	local t gidx
	setup_bound_veth || fail "link add"
	gidx=$(roce2_ipv4_gid srdma0) || fail "no GID"
	for t in "ib_send_bw -s 1024 -n 200" "ib_send_lat -s 1024 -n 100"; do
		client_server "$t -c UD -F -d srdma0 -x $gidx -p 18516" \
			"$t -c UD -F -d srdma0 -x $gidx -p 18516 127.0.0.1" 120 ||
			fail "$t -c UD"
	done
}

# Two devices in two namespaces, srdma0 (10.0.0.1) here and srdma1
# (10.0.0.2) in ns1: each namespace's CM reaches the other's over the veth.
cm_netns_setup() {
	modprobe rdma_ucm && modprobe srdma && veth_netns_pair || return 1
	rdma link add srdma0 type srdma netdev v0 &&
		ip netns exec ns1 rdma link add srdma1 type srdma netdev v1
}

# rping_netns_both ADDR0 ADDR1: 10 verified pings from this namespace to
# ns1's ADDR1, then from ns1 to this namespace's ADDR0.
rping_netns_both() {
	client_server "ip netns exec ns1 rping -s -a $2 -C 10 -V" \
		"rping -c -a $2 -C 10 -V -v" 120 || fail "rping to ns1"
	[ "$(grep -c 'ping data: rdma-ping-' /tmp/client.log)" = 10 ] ||
		fail "10 pings verified to ns1"
	client_server "rping -s -a $1 -C 10 -V" \
		"ip netns exec ns1 rping -c -a $1 -C 10 -V -v" 120 ||
		fail "rping from ns1"
	[ "$(grep -c 'ping data: rdma-ping-' /tmp/client.log)" = 10 ] ||
		fail "10 pings verified from ns1"
}

test_cm_rping_netns() {
	cm_netns_setup || fail "setup"
	rping_netns_both 10.0.0.1 10.0.0.2
	# The CM MADs went to each namespace's own QP1, none elsewhere.
	[ "$(counter rx_bad_header)" = 0 ] || fail "bad headers"
}

# rdma_cm over a VLAN: 802.1Q uppers of both ends of the veth pair (v0.10,
# and v1.10 in ns1), whose addresses the core gives each device as GIDs.
# QP1 takes the CM's MADs that come in through the upper, and their
# completions carry its VLAN ID, from which the MAD layer finds the GID to
# answer from: rping connects and verifies its data both ways, over the
# VLAN (its counters), and nothing is left.
test_cm_rping_vlan() {
	cm_netns_setup || fail "setup"
	vlan_uppers || fail "VLAN uppers"
	rping_over_vlan
}

# VLAN 10 over both ends of the veth pair: v0.10 (10.0.10.1) here, v1.10
# (10.0.10.2) in ns1.
vlan_uppers() {
	ip link add link v0 name v0.10 type vlan id 10 &&
		ip addr add 10.0.10.1/24 dev v0.10 && ip link set v0.10 up &&
		ip -n ns1 link add link v1 name v1.10 type vlan id 10 &&
		ip -n ns1 addr add 10.0.10.2/24 dev v1.10 &&
		ip -n ns1 link set v1.10 up
}

# rping both ways over VLAN 10; 40 packets or more in through v0.10, no bad
# header, nothing left.
rping_over_vlan() {
	local rx0
	roce2_gid_of srdma0 '*:ffff:0a00:0a01' > /dev/null ||
		fail "no GID for v0.10's address"
	wait_for 5 ping -c 1 -W 1 10.0.10.2 || fail "no ping over the VLAN"
	rx0=$(cat /sys/class/net/v0.10/statistics/rx_packets)
	rping_netns_both 10.0.10.1 10.0.10.2
	# CM MADs, requests and replies of 40 pings came in through v0.10.
	(( $(cat /sys/class/net/v0.10/statistics/rx_packets) - rx0 >= 40 )) ||
		fail "too few packets in through v0.10"
	[ "$(counter rx_bad_header)" = 0 ] || fail "bad headers"
	wait_for 10 cm_nothing_left || fail "resources left"
}

# A device is not bound to a VLAN device: the core would give it none of
# the VLAN's addresses as GIDs (it looks at the real device's), so rdma_cm
# could not use it. The refusal names the real device to bind instead; a
# device bound to that one runs rping over the VLAN (cm_rping_vlan).
test_cm_bound_vlan_refused() {
	cm_netns_setup || fail "setup"
	vlan_uppers || fail "VLAN uppers"
	expect_err "Invalid argument" \
		rdma link add srdma2 type srdma netdev v0.10 || return 1
	dmesg | tail -3 | grep -q 'srdma2: v0.10 is a VLAN device; bind v0,' ||
		fail "no message naming v0"
	dev_absent srdma2 || fail "device created on a VLAN"
}

test_cm_rping_ipv6() {
	cm_setup || fail "setup"
	ip -6 addr add fd00::1/64 dev v0 nodad || fail "address"
	roce2_gid_of srdma0 'fd00:*' > /dev/null || fail "no IPv6 GID"
	client_server "rping -s -a fd00::1 -C 10 -V -S 2000" \
		"rping -c -a fd00::1 -C 10 -V -v -S 2000" 120 || fail "rping"
	[ "$(grep -c 'ping data: rdma-ping-' /tmp/client.log)" = 10 ] ||
		fail "10 pings verified"
}

# The CM retries the MADs netem drops; RC retransmits the data.
# client_server for a lossy wire: the client's verdict is the test's. Its
# server ends when the client's disconnect reaches it, but the CM sends a
# DREQ the wire dropped again only while the client's cm_id lives, and
# rping and ucmatose destroy theirs at once: such a server waits forever
# (seen once in about a hundred runs). It is stopped 30 s after its
# client ended and noted; its log (line-buffered) must hold no error.
cm_lossy_pair() {	# cm_lossy_pair SERVER CLIENT
	local before spid i rc=0
	before=$(listeners)
	timeout 300 stdbuf -oL -eL bash -c "$1" > /tmp/server.log 2>&1 &
	spid=$!
	for ((i = 0; i < 300; i++)); do
		[ "$(listeners)" -gt "$before" ] && break
		sleep 0.1
	done
	timeout 300 bash -c "$2" > /tmp/client.log 2>&1 ||
		{ echo "client failed:"; cat /tmp/client.log; rc=1; }
	for ((i = 0; i < 300; i++)); do
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$spid" 2>/dev/null; then
		kill "$spid"
		wait "$spid"
		echo "# ${1##* ns1 }: server still waiting 30 s after its client ended (its DREQ lost?), stopped"
		grep -iE 'error|fail' /tmp/server.log && rc=1
	elif ! wait "$spid"; then
		echo "server failed:"
		cat /tmp/server.log
		rc=1
	fi
	return $rc
}

test_cm_loss() {
	cm_netns_setup || fail "setup"
	modprobe sch_netem || return 4
	tc qdisc add dev v0 root netem loss 1% || fail "netem"
	ip netns exec ns1 tc qdisc add dev v1 root netem loss 1% ||
		fail "netem"
	cm_lossy_pair "ip netns exec ns1 rping -s -a 10.0.0.2 -C 50 -V" \
		"rping -c -a 10.0.0.2 -C 50 -V -v" || fail "rping"
	[ "$(grep -c 'ping data: rdma-ping-' /tmp/client.log)" = 50 ] ||
		fail "50 pings verified"
	cm_lossy_pair "ip netns exec ns1 ucmatose -b 10.0.0.2 -c 4 -C 50" \
		"ucmatose -s 10.0.0.2 -c 4 -C 50" || fail "ucmatose"
	grep -q 'data transfers complete' /tmp/client.log || fail "transfers"
}

# Connections come and go without leaving anything behind, and the module
# then unloads with its device still bound.
test_cm_rping_cycles() {
	local i
	cm_setup || fail "setup"
	# The server outlives the 30 cycles: about 5 s each on the debug
	# kernel under load.
	timeout 3600 rping -s -P -a 10.0.0.1 > /tmp/server.log 2>&1 &
	wait_for 30 sh -c "rdma resource show cm_id | grep -q LISTEN" ||
		fail "no listener"
	for i in $(seq 30); do
		rping -c -a 10.0.0.1 -C 1 -V -S 100 > /tmp/client.log 2>&1 ||
			{ cat /tmp/client.log; fail "cycle $i"; }
	done
	kill %1; wait
	wait_for 10 cm_nothing_left || fail "resources left"
	rmmod srdma || fail "rmmod with srdma0 bound"
}

# Malformed and hostile datagrams at QP1 (and QPN 0) while rping connects
# and runs: wrong Q_Keys and P_Keys, truncated DETHs, garbage MADs with the
# right Q_Key. The CM keeps working, the drops are counted, no splat.
test_cm_qp1_storm() {
	local before after spid
	cm_netns_setup || fail "setup"
	wait_for 5 ping -c 1 -W 1 10.0.0.2 || fail "ping"
	before=$(($(counter rx_qkey_violations) + $(counter rx_bad_header) +
		  $(counter rx_sock_dropped) + $(counter rx_bad_icrc)))
	ip netns exec ns1 python3 "$SRDMA_ROOT/selftests/storm.py" \
		10.0.0.2 10.0.0.1 4000 0 1 > /tmp/storm.log 2>&1 &
	spid=$!
	client_server "ip netns exec ns1 rping -s -a 10.0.0.2 -C 20 -V" \
		"rping -c -a 10.0.0.2 -C 20 -V -v" 300 || fail "rping"
	wait $spid
	[ "$(grep -c 'ping data: rdma-ping-' /tmp/client.log)" = 20 ] ||
		fail "20 pings verified"
	after=$(($(counter rx_qkey_violations) + $(counter rx_bad_header) +
		 $(counter rx_sock_dropped) + $(counter rx_bad_icrc)))
	echo "# $(cat /tmp/storm.log); dropped and counted: $((after - before))"
	[ $((after - before)) -ge 1000 ] || fail "only $((after - before)) drops"
	[ "$(counter rx_qkey_violations)" -gt 0 ] || fail "no Q_Key violation"
	client_server "ip netns exec ns1 rping -s -a 10.0.0.2 -C 5 -V" \
		"rping -c -a 10.0.0.2 -C 5 -V" 120 || fail "rping after"
}

# N rping connections (connect, one ping, disconnect) to DEV's own address
# 10.0.0.1 on v0, against a persistent server: the mean time of one, in
# microseconds.
cm_rping_cycles_us() {
	local n=$1 i t0 t1 spid
	rping -s -P -a 10.0.0.1 > /tmp/server.log 2>&1 &
	spid=$!
	wait_for 30 sh -c "rdma resource show cm_id | grep -q LISTEN" ||
		{ kill $spid; return 1; }
	t0=$(date +%s%N)
	for i in $(seq "$n"); do
		rping -c -a 10.0.0.1 -C 1 -S 100 > /tmp/client.log 2>&1 ||
			{ kill $spid; return 1; }
	done
	t1=$(date +%s%N)
	kill $spid
	wait $spid 2>/dev/null
	echo $(((t1 - t0) / n / 1000))
}

# Connection set-up time of rping on srdma against rdma_rxe, same guest,
# same veth, one after the other, 10 set-ups each. Under TCG only the ratio
# means anything (make check has no time for a precise one).
test_cm_setup_time() {
	local s r
	cm_setup || fail "setup"
	s=$(cm_rping_cycles_us 10) || fail "rping on srdma"
	rdma link delete srdma0 && rmmod srdma || fail "unload srdma"
	modprobe rdma_rxe && rdma link add rxe0 type rxe netdev v0 ||
		fail "rxe"
	r=$(cm_rping_cycles_us 10) || fail "rping on rxe"
	rdma link delete rxe0
	echo "# rping connection set-up: srdma $s us, rxe $r us," \
		"srdma/rxe $((s * 100 / r))%"
}

# Is NETDEV in namespace NETNS (- for this one) in group 239.1.1.1?
mckey_joined() {
	local ns=()
	[ "$1" = - ] || ns=(-n "$1")
	ip "${ns[@]}" maddr show dev "$2" | grep -qw 239.1.1.1
}

# mckey_once RX TX: RX and TX are "NETNS DEV ADDR NETDEV" (NETNS - for
# this namespace). The receiver joins 239.1.1.1 (rdma_cm joins the group
# on its netdev, librdmacm attaches the QP) and waits for 20 datagrams;
# the sender joins too and sends 20 once the receiver's netdev is in the
# group: no readiness line or rdma_cm listener says so earlier.
mckey_once() {
	local rns rdev raddr rnd tns taddr rexec=() texec=() spid rc=0
	local before after nogrp
	read -r rns rdev raddr rnd <<< "$1"
	read -r tns _ taddr _ <<< "$2"
	[ "$rns" = - ] || rexec=(ip netns exec "$rns")
	[ "$tns" = - ] || texec=(ip netns exec "$tns")
	before=$(counter rx_packets "$rdev")
	nogrp=$(counter rx_mcast_no_group "$rdev")
	timeout 60 "${rexec[@]}" mckey -m 239.1.1.1 -b "$raddr" -C 20 \
		> /tmp/server.log 2>&1 &
	spid=$!
	if ! wait_for 30 mckey_joined "$rns" "$rnd"; then
		kill "$spid"; wait "$spid"
		echo "receiver never joined:"; cat /tmp/server.log
		return 1
	fi
	timeout 60 "${texec[@]}" mckey -m 239.1.1.1 -b "$taddr" -s -C 20 \
		> /tmp/client.log 2>&1 || rc=$?
	wait "$spid" || { echo "receiver failed:"; rc=1; }
	cat /tmp/server.log /tmp/client.log
	[ $rc = 0 ] || return 1
	grep -q 'data transfers complete' /tmp/server.log ||
		{ echo "receiver did not finish"; return 1; }
	after=$(counter rx_packets "$rdev")
	[ $((after - before)) = 20 ] ||
		{ echo "$rdev received $((after - before)) datagrams, not 20"; return 1; }
	[ "$(counter rx_mcast_no_group "$rdev")" = "$nogrp" ] ||
		{ echo "$rdev: datagrams to no group"; return 1; }
}

# mckey between srdma0 here and srdma1 in ns1, both ways, over IPv4:
# rdma_cm refuses RoCEv2 joins of IPv6 groups (ENOTSUPP in 6.1), so IPv6
# multicast is tested with verbs only (srdma_ud_test's mcast_ipv6_*).
test_cm_mckey() {
	cm_netns_setup || fail "setup"
	mckey_once "ns1 srdma1 10.0.0.2 v1" "- srdma0 10.0.0.1 v0" ||
		fail "mckey to ns1"
	mckey_once "- srdma0 10.0.0.1 v0" "ns1 srdma1 10.0.0.2 v1" ||
		fail "mckey from ns1"
	# Both ends detached and left the group on their netdevs.
	wait_for 10 eval '! mckey_joined - v0' || fail "v0 still in the group"
	wait_for 10 eval '! mckey_joined ns1 v1' || fail "v1 still in the group"
	[ -z "$(rdma resource show cm_id)" ] || fail "cm_ids left"
}
