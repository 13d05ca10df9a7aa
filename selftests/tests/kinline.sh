#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Inline data from a kernel consumer: the test module
# selftests/kmod/srdma_ktest_inline.ko runs its checks when it loads (RC,
# UC and UD QPs of srdma0 in loopback; caps, sizes 0, 1 and max from a
# stack buffer, every completion field, EINVAL over the limit) and loads
# only if all passed.

test_kernel_inline() {
	ktest_module srdma_ktest_inline
}
