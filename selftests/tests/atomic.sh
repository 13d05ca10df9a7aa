#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# RC atomics between two devices: srdma to srdma across a veth pair and
# namespaces (pair_setup and netem of loss.sh), srdma to and from rdma_rxe
# in one guest, with and without loss; perftest's ib_atomic_bw and
# ib_atomic_lat, both atomic kinds. The single-device cases of
# srdma_atomic_test run from run.sh.

# The srdma_atomic_test cases whose outcome loss cannot change: values,
# completions and the counter. (An error NAK lost under loss turns into a
# retry-exceeded error, as it should.)
ATOMIC_VALUE_TESTS=caps,cas,faa,counter,unsignaled,qpex,awrite
# The same without ATOMIC WRITE, for an rdma_rxe requester under loss:
# rxe (6.2 to at least 6.12) resends an ATOMIC WRITE with VA 0 (its
# req_retry() resets the address of READs, WRITEs and atomics only), which
# the responder must refuse as a remote access error.
ATOMIC_VALUE_TESTS_RXE_REQ=caps,cas,faa,counter,unsignaled,qpex

# atomic_run REQ_DEV TGT_DEV [TESTS [ITERS]]: srdma_atomic_test from
# REQ_DEV's QPs to TGT_DEV's; 0 if every selected case passed.
atomic_run() {
	local out rc
	out=$(SRDMA_DEV=$1 SRDMA_ATOMIC_PEER=$2 SRDMA_ATOMIC_TESTS=${3:-} \
		SRDMA_ATOMIC_ITERS=${4:-500} timeout 600 srdma_atomic_test 2>&1)
	rc=$?
	grep -E '^(not )?ok |^# (FAIL|.*Expected|.*got|.*stalled|.*value|.*timeout)' <<< "$out" |
		sed "s/^/# $1->$2: /"
	grep -qE '^# PASSED|^# FAILED' <<< "$out" || echo "$out" | tail -20
	return $rc
}

# rxe0 on v0 (10.0.0.1, init_net, where rdma_rxe holds UDP 4791) and
# srdma0 on v1 (10.0.0.2) in ns1.
atomic_rxe_setup() {
	modprobe rdma_rxe 2>/dev/null || return 4
	modprobe srdma && modprobe sch_netem && veth_netns_pair || return 1
	rdma link add rxe0 type rxe netdev v0 || return 1
	ip netns exec ns1 rdma link add srdma0 type srdma netdev v1 || return 1
	wait_for 5 ping -c 1 -W 1 10.0.0.2
}

test_atomic_srdma_pair() {
	pair_setup || fail "setup"
	atomic_run srdma0 srdma1 || fail "srdma0 -> srdma1"
	atomic_run srdma1 srdma0 || fail "srdma1 -> srdma0"
}

# 5% loss each way: requests and ATOMIC ACKNOWLEDGEs are lost, atomics
# are sent again and the responder answers the duplicates from its replay
# cache. The counter test then proves no atomic ran twice.
test_atomic_srdma_loss() {
	pair_setup && netem loss 5% || fail "setup"
	atomic_run srdma0 srdma1 "$ATOMIC_VALUE_TESTS" 1000 ||
		fail "srdma0 -> srdma1 under 5% loss"
	local replays misses retx
	replays=$(ns_counter ns1 atomic_replays srdma1)
	misses=$(ns_counter ns1 atomic_replay_misses srdma1)
	retx=$(counter retransmits)
	echo "# retransmits $retx atomic_replays $replays misses $misses"
	[ "$retx" -ge 1 ] || fail "nothing retransmitted"
	[ "$replays" -ge 1 ] || fail "no duplicate atomic answered from the cache"
	[ "$misses" = 0 ] || fail "$misses duplicates missed the replay cache"
}

test_atomic_rxe() {
	atomic_rxe_setup
	case $? in 0) ;; 4) return 4 ;; *) fail "setup" ;; esac
	atomic_run srdma0 rxe0 || fail "srdma0 -> rxe0"
	atomic_run rxe0 srdma0 || fail "rxe0 -> srdma0"
}

test_atomic_rxe_loss() {
	atomic_rxe_setup
	case $? in 0) ;; 4) return 4 ;; *) fail "setup" ;; esac
	netem loss 5% || fail "netem"
	atomic_run srdma0 rxe0 "$ATOMIC_VALUE_TESTS" 1000 ||
		fail "srdma0 -> rxe0 under 5% loss"
	atomic_run rxe0 srdma0 "$ATOMIC_VALUE_TESTS_RXE_REQ" 1000 ||
		fail "rxe0 -> srdma0 under 5% loss"
	echo "# srdma0 retransmits $(ns_counter ns1 retransmits)" \
		"atomic_replays $(ns_counter ns1 atomic_replays)"
	[ "$(ns_counter ns1 atomic_replays)" -ge 1 ] ||
		fail "srdma0 answered no duplicate atomic from its cache"
}

# perftest's atomic tools on srdma0 in loopback.
test_atomic_perftest() {
	setup_bound_veth || fail "link add"
	local a
	for a in CMP_AND_SWAP FETCH_AND_ADD; do
		perf_pair ib_atomic_bw -A $a -n 500 || return 1
		perf_pair ib_atomic_lat -A $a -n 200 || return 1
	done
}

# perf_ns SERVER_NS "SERVER" "CLIENT": like client_server, with the
# server's TCP listener in namespace SERVER_NS ("" for this one).
perf_ns() {
	local spid rc=0 ns=${1:+ip netns exec $1}
	timeout 120 bash -c "$2" > /tmp/server.log 2>&1 &
	spid=$!
	wait_for 30 sh -c "$ns ss -Hltn | grep -q ':18515 '" ||
		{ kill $spid; echo "no server: $(cat /tmp/server.log)"; return 1; }
	timeout 120 bash -c "$3" > /tmp/client.log 2>&1 || rc=$?
	wait $spid || { echo "server failed:"; cat /tmp/server.log; rc=1; }
	grep -qE '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/client.log ||
		{ echo "no result line:"; cat /tmp/client.log; rc=1; }
	grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' /tmp/client.log | sed 's/^/# /'
	return $rc
}

# The same between srdma0 (ns1) and rxe0 (init_net), both directions:
# the client issues the atomics, the server's memory takes them.
test_atomic_perftest_rxe() {
	atomic_rxe_setup
	case $? in 0) ;; 4) return 4 ;; *) fail "setup" ;; esac
	local gs gr a t
	gs=$(roce2_ipv4_gid srdma0) && gr=$(roce2_ipv4_gid rxe0) ||
		fail "no GIDs"
	for a in CMP_AND_SWAP FETCH_AND_ADD; do
		for t in "ib_atomic_bw -A $a -n 500" "ib_atomic_lat -A $a -n 200"; do
			echo "# $t: srdma0 -> rxe0"
			perf_ns "" "$t -d rxe0 -x $gr -F" \
				"ip netns exec ns1 $t -d srdma0 -x $gs -F 10.0.0.1" ||
				fail "$t srdma0 -> rxe0"
			echo "# $t: rxe0 -> srdma0"
			perf_ns ns1 "ip netns exec ns1 $t -d srdma0 -x $gs -F" \
				"$t -d rxe0 -x $gr -F 10.0.0.2" ||
				fail "$t rxe0 -> srdma0"
		done
	done
}
