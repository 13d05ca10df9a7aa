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
	ktest_module srdma_resize_ktest
}
