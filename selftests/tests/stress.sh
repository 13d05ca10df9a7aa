#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Object lifetimes under traffic (sourced by run.sh): srdma_stress between
# srdma0 on v0 (10.0.0.1) and srdma1 on v1 (10.0.0.2, netns ns1), with QPs,
# CQs and MRs created and destroyed, QPs moved to ERR and RESET and MRs
# deregistered mid-transfer; then the same while the devices, the netdevs
# and the namespace go away. Each test_* runs in a subshell; non-zero
# fails it, 4 skips it.

# Run time of the lifetimes test; the link-delete test takes about 20 s.
STRESS_SECS=${SRDMA_STRESS_SECS:-40}

stress_pair_setup() {
	modprobe srdma || return 1
	veth_netns_pair || return 1
	rdma link add srdma0 type srdma netdev v0 || return 1
	ip netns exec ns1 rdma link add srdma1 type srdma netdev v1 || return 1
	wait_for 5 ping -c 1 -W 1 10.0.0.2 || return 1
	# srdma_stress looks the GIDs up itself; wait until they exist.
	roce2_ipv4_gid srdma0 > /dev/null && roce2_ipv4_gid srdma1 > /dev/null
}

# "DEV: pd N cq N qp N mr N" for every srdma device in `rdma resource show`.
stress_res() {
	rdma resource show | awk '$2 ~ /^srdma/ {
		delete n
		for (i = 3; i < NF; i += 2) n[$i] = $(i + 1)
		print $2, "pd", n["pd"], "cq", n["cq"], "qp", n["qp"], "mr", n["mr"]
	}'
}

# The counts of a run, in the kernel log too: the runner shows a test's
# output only when it fails.
stress_log_counts() {
	local line
	grep -E '^(srdma_stress|sessions|faults|objects|work requests|completions|without|data verified|errors|busy|device removed)' "$1" |
		while read -r line; do
			case $line in
			srdma_stress:*) ;;
			*) line="srdma_stress: $line" ;;
			esac
			echo "$line" > /dev/kmsg
		done
}

# What every thread of PID is blocked in (a hang in the kernel).
stress_stacks() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "# task ${t##*/}: $(cat "$t/wchan" 2>/dev/null)"
		sed 's/^/#   /' "$t/stack" 2>/dev/null
	done
}

# Wait up to SECS for PID to exit; fails with the stacks of its threads.
stress_wait_exit() {
	local pid=$1 n=$(($2 * 10))
	while kill -0 "$pid" 2>/dev/null; do
		n=$((n - 1))
		if [ $n -le 0 ]; then
			stress_stacks "$pid"
			kill -9 "$pid"
			fail "srdma_stress (pid $pid) did not exit within $2 s"
		fi
		sleep 0.1
	done
}

test_stress_lifetimes() {
	local log=/tmp/stress-lifetimes.log pid rc before after
	stress_pair_setup || fail "setup"
	before=$(stress_res)
	srdma_stress -a srdma0 -b srdma1 -t "$STRESS_SECS" -n 4 > "$log" 2>&1 &
	pid=$!
	# Its own watchdog ends it by 2 * (15 + 10) + 20 s after the deadline
	# (the two bounds scale with SRDMA_TEST_SLOW).
	stress_wait_exit "$pid" $((STRESS_SECS + 100 * (1 + ${SRDMA_TEST_SLOW:-0})))
	wait "$pid"
	rc=$?
	cat "$log"
	stress_log_counts "$log"
	[ $rc = 0 ] || fail "srdma_stress exited with $rc"
	grep -q '^srdma_stress: PASS' "$log" || fail "no PASS line"
	# It did something: QPs, MRs, and successful transfers.
	grep -qE '^objects created: qp [1-9]' "$log" || fail "no QP created"
	grep -qE '^completions: .*success [1-9]' "$log" ||
		fail "no successful completion"
	grep -qE '^faults: none [0-9]+ dereg_remote [1-9]' "$log" ||
		echo "# note: no dereg_remote fault in this run"
	# Every object of the process is gone from the kernel.
	after=$(stress_res)
	[ "$after" = "$before" ] ||
		fail "objects left: '$after', before: '$before' ($(rdma resource show))"
}

test_stress_link_delete() {
	local log=/tmp/stress-link-delete.log pid rc
	stress_pair_setup || fail "setup"
	# -t is only a bound: the process ends once both devices are gone.
	# It must outlast the deletions, which on the debug kernel under
	# load took 20 s.
	srdma_stress -a srdma0 -b srdma1 -t 120 -n 4 -r > "$log" 2>&1 &
	pid=$!
	sleep 10
	kill -0 "$pid" 2>/dev/null || { cat "$log"; fail "srdma_stress ended early"; }

	# srdma1 goes while its QPs carry traffic; srdma0 goes on alone.
	timeout 60 ip netns exec ns1 rdma link delete srdma1 ||
		{ stress_stacks "$pid"; fail "rdma link delete srdma1"; }
	wait_for 10 dev_absent srdma1 || fail "srdma1 still present"
	sleep 4
	kill -0 "$pid" 2>/dev/null || { cat "$log"; fail "srdma_stress ended early"; }

	# The namespace takes v1 and with it its peer v0, and so srdma0.
	timeout 60 ip netns del ns1 || fail "ip netns del ns1"
	wait_for 30 dev_absent srdma0 ||
		{ stress_stacks "$pid"; fail "srdma0 survived its netdev"; }

	# No device left: the process sees the errors and ends.
	stress_wait_exit "$pid" 60
	wait "$pid"
	rc=$?
	cat "$log"
	stress_log_counts "$log"
	[ $rc = 0 ] || fail "srdma_stress exited with $rc"
	grep -q '^device removed: srdma1' "$log" || fail "srdma1's removal not seen"
	grep -q '^device removed: srdma0' "$log" || fail "srdma0's removal not seen"
	[ -z "$(stress_res)" ] || fail "resources left: $(rdma resource show)"
	# And the module unloads.
	ip link del v0 2>/dev/null
	modprobe -r srdma || fail "modprobe -r srdma"
	! lsmod | grep -q '^srdma ' || fail "srdma still loaded"
	! rdma resource show 2>/dev/null | grep -q srdma ||
		fail "srdma resources after unload: $(rdma resource show)"
}
