#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# ib_resize_cq() from a kernel consumer: the test module
# selftests/kmod/srdma_resize_ktest.ko runs its checks when it loads (one
# RC QP of srdma0 in loopback, send and receive CQs resized empty, with
# completions pending and while they come in; every completion field in
# order; EINVAL for 0, -1, over max_cqe and below the pending count) and
# loads only if all passed. The user side is srdma_resize_test (run.sh).

test_kernel_resize_cq() {
	local ko=$SRDMA_ROOT/selftests/kmod/srdma_resize_ktest.ko mark out rc
	[ -f "$ko" ] || fail "no $ko (run make)"
	setup_bound_veth || fail "link add"
	roce2_ipv4_gid srdma0 > /dev/null || fail "no GID"
	mark=$(dmesg | wc -l)
	insmod "$ko" dev=srdma0
	rc=$?
	out=$(dmesg | tail -n +$((mark + 1)) | grep srdma_resize_ktest)
	echo "$out"
	[ $rc = 0 ] || fail "the module's checks failed"
	grep -q 'srdma_resize_ktest: PASS: [0-9]* checks' <<< "$out" ||
		fail "no PASS line"
	echo "# $(grep -o 'PASS: [0-9]* checks' <<< "$out")"
	rmmod srdma_resize_ktest || fail "rmmod"
}
