#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Allocation failures (debug kernel only: failslab and fail_page_alloc).
# srdma_faults fails the 1st, 2nd, 3rd... kernel allocation of its own
# thread (fail-nth) during a whole verbs sequence, one per run, until the
# sequence runs through: every verb must fail with an errno or succeed,
# never splat; the next clean run must work; nothing may be left behind;
# the final kmemleak check of the run covers leaks.

test_alloc_failures() {
	[ -d /sys/kernel/debug/failslab ] || return 4	# not the debug kernel
	local f mark n out
	setup_bound_veth || fail "setup"
	for f in failslab fail_page_alloc; do
		f=/sys/kernel/debug/$f
		echo 0 > $f/probability		# fail-nth only
		echo N > $f/task-filter
		echo 1 > $f/verbose		# one line per failure, no stack
		echo N > $f/ignore-gfp-wait	# GFP_KERNEL may fail too
	done
	echo N > /sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem
	echo 0 > /sys/kernel/debug/fail_page_alloc/min-order
	mark=$(dmesg | wc -l)
	out=$(timeout 1200 srdma_faults 2>&1) || { echo "$out"; fail "srdma_faults"; }
	echo "$out"
	log=$(dmesg | tail -n +$((mark + 1)))
	n=$(grep -c 'FAULT_INJECTION: forcing a failure' <<< "$log")
	echo "# failures injected (kernel log, rate-limited): $n"
	# A failed allocation outside srdma may warn with a stack (warn_alloc):
	# that is the allocator reporting, by design. Anything else fails.
	if [ "$(grep -c 'Call Trace' <<< "$log")" != \
	     "$(grep -c 'warn_alloc' <<< "$log")" ] ||
	   grep -E "$DMESG_BAD" <<< "$log" | grep -qvE 'Call Trace'; then
		grep -E "$DMESG_BAD|warn_alloc" <<< "$log" | head -20
		fail "kernel report other than an allocation-failure warning"
	fi
	dmesg -C	# keep the warn_alloc stacks out of later log checks
	grep -q "^faults injected: [1-9]" <<< "$out" || fail "no failure injected"
	grep -q "^PASS" <<< "$out" || fail "srdma_faults did not pass"
	# Failures must have landed in each verb that allocates.
	for v in alloc_pd reg_mr create_cq create_qp connect; do
		grep -q "landed in $v: [1-9]" <<< "$out" ||
			fail "no injected failure landed in $v"
	done
	# Only the MAD layer's GSI QP (QPN 1) may remain.
	[ "$(rdma resource show qp link srdma0/1 | grep -vc 'lqpn 1 ')" = 0 ] ||
		fail "QPs left behind: $(rdma resource show qp)"
	rdma resource show mr | grep -q srdma0 && fail "MRs left behind"
	rdma link delete srdma0 || fail "link delete"
	rmmod srdma || fail "rmmod"
}
