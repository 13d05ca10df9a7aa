#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Allocation failures (failslab and fail_page_alloc, debug kernel only):
# the verbs run with a share of srdma's kernel allocations failing, scoped to
# the test processes (make-it-fail) and to allocations with srdma's code on
# the stack (require-start/end), must get errors, never a splat; the
# same verbs must work again once injection stops; leaks are caught by the
# kmemleak check at the end of the run.

faults_on() {	# faults_on PERCENT
	local f base size
	# Only allocations with srdma's code on the stack fail: failing the
	# 9p root or the loader under the test would only test those.
	read -r base size < <(awk '$1 == "srdma" { print $6, $2 }' /proc/modules)
	[ -n "$base" ] && [ $((base)) != 0 ] || return 1
	for f in failslab fail_page_alloc; do
		f=/sys/kernel/debug/$f
		echo "$base" > $f/require-start		# 0x... from /proc/modules
		printf '%#x\n' $((base + size)) > $f/require-end
		echo 32 > $f/stacktrace-depth
		echo Y > $f/task-filter
		echo "$1" > $f/probability
		echo 0 > $f/interval
		echo -1 > $f/times
		echo 0 > $f/space
		echo 1 > $f/verbose	# one line per failure, no stack
		[ -e $f/ignore-gfp-wait ] && echo N > $f/ignore-gfp-wait
	done
	echo N > /sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem
	echo 0 > /sys/kernel/debug/fail_page_alloc/min-order
}

faults_off() {
	echo 0 > /sys/kernel/debug/failslab/probability
	echo 0 > /sys/kernel/debug/fail_page_alloc/probability
}

test_alloc_failures() {
	[ -d /sys/kernel/debug/failslab ] || return 4	# not the debug kernel
	setup_bound_veth || fail "setup"
	local mark i n
	mark=$(dmesg | wc -l)
	faults_on 20 || fail "srdma's address range not found"
	for i in $(seq 5); do
		# Only this process and its children fail allocations.
		timeout 120 bash -c 'echo 1 > /proc/self/make-it-fail;
			exec srdma_verbs_test' > /tmp/faults.$i.log 2>&1
		[ $? = 124 ] && { faults_off; fail "run $i hung"; }
	done
	faults_off
	n=$(dmesg | tail -n +$((mark + 1)) | grep -c 'FAULT_INJECTION: forcing a failure')
	echo "# allocation failures injected: $n"
	[ "$n" -gt 0 ] || fail "no failure was injected"
	# Once injection stops, everything works again.
	srdma_verbs_test > /tmp/faults.after.log 2>&1 ||
		{ tail -20 /tmp/faults.after.log; fail "verbs fail after injection stopped"; }
	rdma resource show qp | grep -q srdma0 && fail "QPs left behind"
	rdma link delete srdma0 || fail "link delete"
	rmmod srdma || fail "rmmod"
}
