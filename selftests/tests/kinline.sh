#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Inline data from a kernel consumer: the test module
# selftests/kmod/srdma_ktest_inline.ko runs its checks when it loads (RC,
# UC and UD QPs of srdma0 in loopback; caps, sizes 0, 1 and max from a
# stack buffer, every completion field, EINVAL over the limit) and loads
# only if all passed.

test_kernel_inline() {
	local ko=$SRDMA_ROOT/selftests/kmod/srdma_ktest_inline.ko mark out
	[ -f "$ko" ] || fail "no $ko (run make)"
	setup_bound_veth || fail "link add"
	roce2_ipv4_gid srdma0 > /dev/null || fail "no GID"
	mark=$(dmesg | wc -l)
	insmod "$ko" dev=srdma0
	local rc=$?
	out=$(dmesg | tail -n +$((mark + 1)) | grep srdma_ktest_inline)
	echo "$out"
	[ $rc = 0 ] || fail "the module's checks failed"
	grep -q 'srdma_ktest_inline: PASS: [0-9]* checks' <<< "$out" ||
		fail "no PASS line"
	echo "# $(grep -o 'PASS: [0-9]* checks' <<< "$out")"
	rmmod srdma_ktest_inline || fail "rmmod"
}
