#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# rdma-core's own test suite (pyverbs, from python3-pyverbs) on srdma0, and
# the same selection on rdma_rxe for comparison. Each prints one line
#   # pyverbs DEV: ran N, passed N, failed N, errors N, skipped N in N s
# srdma0 fails on any failure or error; tests skip where srdma lacks a
# feature (MWs, XRC, ...). rdma_rxe never fails:
# 6.1's has known errors of its own. The two run in separate tests because
# rdma_rxe holds UDP port 4791 in init_net from its load on (env_reset
# unloads it in between).
#
# Both devices are bound to the veth v0 (10.0.0.1): the single test VM has
# no NIC, so no eth0. The suite's rdma_cm tests look for the netdev under
# the ib_device's parent device, which a veth lacks, and would skip;
# selftests/pyverbs/run.py finds it through the GID table instead, on both
# devices (so rxe runs them too, unlike the stock runner on rxe).
# Each device takes one to one and a half minutes under TCG.
#
# SRDMA_PYVERBS_TESTS (in the guest's environment): unittest names (test_qp,
# test_qp.QPTest, test_qp.QPTest.test_query_ud_qp, ...) instead of the
# default selection, or "all" for the whole suite.

# run.sh shows a test's output only when it fails or skips; the counts are
# wanted in every run. Keep run.sh's stdout while it sources this file.
exec {pyverbs_out}>&1

# Must pass on srdma0, not merely skip: rdma_cm (multicast included),
# completion events, UD QPs, extended CQs (ibv_create_cq_ex) and extended
# QPs (ibv_create_qp_ex, also with create flags 0, which the suite picks at
# random, and the ibv_qp_ex posting API), RC atomics and ATOMIC WRITE
# (XRC ones too), UC QPs, QP creation and query
# with the caps written back (max_inline_data among them), memory
# windows of both types, CQ resizing, parent domains (with huge pages),
# on-demand paging (RC, UD, SRQ, XRC, huge pages, prefetch; not implicit
# MRs), device memory (not imported into another context), XRC (SEND,
# with immediate, atomics, the extended CQ and posting API) and a context,
# PD and MR imported from another context's command file.
PYVERBS_SRDMA_MUST_PASS=(
	test_parent_domain.ParentDomainTrafficTest.test_without_allocators_rc_traffic
	test_parent_domain.ParentDomainTrafficTest.test_default_allocators_rc_traffic
	test_parent_domain.ParentDomainTrafficTest.test_mem_align_rc_traffic
	test_parent_domain.ParentDomainTrafficTest.test_mem_align_ud_traffic
	test_parent_domain.ParentDomainTrafficTest.test_mem_align_srq_excq_rc_traffic
	test_parent_domain.ParentDomainTrafficTest.test_huge_page_traffic
	test_rdmacm.CMTestCase.test_rdmacm_sync_traffic
	test_rdmacm.CMTestCase.test_rdmacm_async_traffic
	test_rdmacm.CMTestCase.test_rdmacm_async_reject_traffic
	test_rdmacm.CMTestCase.test_rdmacm_async_traffic_external_qp
	test_rdmacm.CMTestCase.test_rdmacm_async_udp_traffic
	test_rdmacm.CMTestCase.test_rdmacm_async_read
	test_rdmacm.CMTestCase.test_rdmacm_async_write
	test_rdmacm.CMTestCase.test_rdmacm_async_multicast_traffic
	test_rdmacm.CMTestCase.test_rdmacm_async_ex_multicast_traffic
	test_rdmacm.CMTestCase.test_rdmacm_async_ex_leave_multicast_traffic
	test_cq_events.CqEventsTestCase.test_cq_events_rc
	test_cq_events.CqEventsTestCase.test_cq_events_ud
	test_qp.QPTest.test_create_ud_qp_no_attr
	test_qp.QPTest.test_create_ud_qp_with_attr
	test_qp.QPTest.test_query_data_in_order
	test_relaxed_ordering.RoTestCase.test_ro_ud_traffic
	test_cqex.CQEXAPITest.test_create_cq_ex_bad_flow
	test_cqex.CqExTestCase.test_rc_traffic_cq_ex
	test_cqex.CqExTestCase.test_ud_traffic_cq_ex
	test_qp.QPTest.test_create_rc_qp_ex_no_attr
	test_qp.QPTest.test_create_rc_qp_ex_with_attr
	test_qp.QPTest.test_create_ud_qp_ex_no_attr
	test_qp.QPTest.test_create_ud_qp_ex_with_attr
	test_qp.QPTest.test_modify_ud_qp
	test_qpex.QpExTestCase.test_qp_ex_rc_send
	test_qpex.QpExTestCase.test_qp_ex_rc_send_imm
	test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write
	test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_imm
	test_qpex.QpExTestCase.test_qp_ex_rc_rdma_write_zero_length
	test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read
	test_qpex.QpExTestCase.test_qp_ex_rc_rdma_read_zero_size
	test_qpex.QpExTestCase.test_qp_ex_ud_send
	test_qpex.QpExTestCase.test_qp_ex_ud_send_imm
	test_qpex.QpExTestCase.test_qp_ex_ud_zero_size
	test_qpex.QpExTestCase.test_post_receive_qp_state_bad_flow
	test_qpex.QpExTestCase.test_post_send_qp_state_bad_flow
	test_qpex.QpExTestCase.test_full_rq_bad_flow
	test_qpex.QpExTestCase.test_rq_with_larger_sgl_bad_flow
	test_qp.QPTest.test_create_rc_qp_no_attr
	test_qp.QPTest.test_create_rc_qp_with_attr
	test_qp.QPTest.test_create_uc_qp_no_attr
	test_qp.QPTest.test_create_uc_qp_with_attr
	test_qp.QPTest.test_create_uc_qp_ex_no_attr
	test_qp.QPTest.test_create_uc_qp_ex_with_attr
	test_qp.QPTest.test_query_rc_qp
	test_qp.QPTest.test_query_uc_qp
	test_qp.QPTest.test_query_ud_qp
	test_qpex.QpExTestCase.test_qp_ex_rc_atomic_cmp_swp
	test_qpex.QpExTestCase.test_qp_ex_rc_atomic_fetch_add
	test_qpex.QpExTestCase.test_qp_ex_rc_atomic_write
	test_atomic.AtomicTest.test_atomic_cmp_and_swap
	test_atomic.AtomicTest.test_atomic_fetch_and_add
	test_atomic.AtomicTest.test_atomic_invalid_qp_access
	test_atomic.AtomicTest.test_atomic_invalid_mr_access
	test_atomic.AtomicTest.test_atomic_non_aligned_addr
	test_atomic.AtomicTest.test_atomic_invalid_lkey
	test_atomic.AtomicTest.test_atomic_invalid_rkey
	test_mr.MWTest.test_mw_type1
	test_mr.MWTest.test_invalidate_mw_type1
	test_mr.MWTest.test_mw_type2
	test_mr.MWTest.test_mw_type2_invalidate_local
	test_mr.MWTest.test_mw_type2_invalidate_remote
	test_mr.MWTest.test_mw_type2_invalidate_dealloc
	test_mr.MWTest.test_reg_mw_wrong_type
	test_qpex.QpExTestCase.test_qp_ex_rc_bind_mw
	test_mr.MRTest.test_mr_rereg_access
	test_mr.MRTest.test_mr_rereg_access_bad_flow
	test_mr.MRTest.test_mr_rereg_pd
	test_mr.MRTest.test_mr_rereg_addr
	test_cq.CQTest.test_resize_cq
	test_odp.OdpTestCase.test_odp_rc_traffic
	test_odp.OdpTestCase.test_odp_rc_atomic_cmp_and_swp
	test_odp.OdpTestCase.test_odp_rc_atomic_fetch_and_add
	test_odp.OdpTestCase.test_odp_rc_rdma_read
	test_odp.OdpTestCase.test_odp_rc_rdma_write
	test_odp.OdpTestCase.test_odp_ud_traffic
	test_odp.OdpTestCase.test_odp_rc_srq_traffic
	test_odp.OdpTestCase.test_odp_rc_huge_traffic
	test_odp.OdpTestCase.test_odp_rc_huge_user_addr_traffic
	test_odp.OdpTestCase.test_odp_sync_prefetch_rc_traffic
	test_odp.OdpTestCase.test_odp_async_prefetch_rc_traffic
	test_odp.OdpTestCase.test_odp_prefetch_sync_no_page_fault_rc_traffic
	test_odp.OdpTestCase.test_odp_prefetch_async_no_page_fault_rc_traffic
	test_device.DMTest.test_create_dm
	test_device.DMTest.test_destroy_dm
	test_device.DMTest.test_create_dm_bad_flow
	test_device.DMTest.test_destroy_dm_bad_flow
	test_device.DMTest.test_dm_write
	test_device.DMTest.test_dm_write_bad_flow
	test_device.DMTest.test_dm_read
	test_device.DMTest.test_multi_process_alloc_dm
	test_mr.DeviceMemoryAPITest.test_create_dm_mr
	test_mr.DeviceMemoryAPITest.test_dm_bad_access
	test_mr.DeviceMemoryAPITest.test_dm_bad_registration
	test_mr.DeviceMemoryTest.test_dm_traffic
	test_mr.DeviceMemoryTest.test_dm_remote_traffic
	test_atomic.AtomicTest.test_xrc_atomic_fetch_and_add
	test_atomic.AtomicTest.test_xrc_atomic_cmp_and_swap
	test_cqex.CqExTestCase.test_xrc_traffic_cq_ex
	test_odp.OdpTestCase.test_odp_xrc_traffic
	test_qpex.QpExTestCase.test_qp_ex_xrc_send
	test_qpex.QpExTestCase.test_qp_ex_xrc_send_imm
	test_shared_pd.SharedPDTestCase.test_imported_rc_ex_rdma_write
)

# Tests rdma_rxe passes that srdma0 may not, each with the reason. Every
# other rdma_rxe pass (test_pyverbs_rxe runs first, in the same guest)
# must pass on srdma0 too.
PYVERBS_RXE_ONLY=()

# pyverbs_passes RESULTS: the IDs of the tests that passed, sorted.
pyverbs_passes() {
	awk '$1 == "pass" { print $2 }' "$1" | sort
}

# rdma_rxe's passes: those of its run in this guest if there was one
# (make check-pyverbs-rxe), else the list that run last wrote,
# selftests/pyverbs/rxe0-passes.
rxe_passes() {
	if [ -s /tmp/pyverbs-rxe/results ]; then
		pyverbs_passes /tmp/pyverbs-rxe/results
	else
		grep -v '^#' "$SRDMA_ROOT/selftests/pyverbs/rxe0-passes" | sort
	fi
}

# pyverbs_compare DIR: every rdma_rxe pass passes on srdma0 unless listed
# in PYVERBS_RXE_ONLY; prints both counts. 1 if one does not.
pyverbs_compare() {
	local t known rc=0 e from=run
	[ -s /tmp/pyverbs-rxe/results ] || from=selftests/pyverbs/rxe0-passes
	echo "# pyverbs passes: rxe0 $(rxe_passes | wc -l) ($from), srdma0 $(pyverbs_passes "$1/results" | wc -l)"
	for t in $(comm -23 <(rxe_passes) <(pyverbs_passes "$1/results")); do
		t=${t#tests.}
		known=
		for e in "${PYVERBS_RXE_ONLY[@]}"; do
			[ "${e%%: *}" = "$t" ] && known=${e#*: }
		done
		if [ -n "$known" ]; then
			echo "# passes on rxe0 only: $t ($known)"
		else
			echo "passes on rxe0, not on srdma0: $t ($(grep " tests\.$t\( \|$\)" "$1/results"))"
			rc=1
		fi
	done
	return $rc
}

# pyverbs_suite DIR: an unpacked copy of the suite in DIR/tests (the
# package ships most of it gzipped), next to which go the log and results.
pyverbs_suite() {
	rm -rf "$1" && mkdir -p "$1" &&
		cp -r /usr/share/doc/rdma-core/tests "$1/" && gunzip -f "$1"/tests/*.gz
}

# The unittest names to run in the suite DIR: by default every module but
# the vendor ones (mlx5, EFA, CUDA), which skip on any other device.
pyverbs_names() {
	local f
	case ${SRDMA_PYVERBS_TESTS:-} in
	all) return ;;
	?*) echo "$SRDMA_PYVERBS_TESTS"; return ;;
	esac
	for f in "$1"/tests/test_*.py; do
		f=$(basename "$f" .py)
		case $f in
		test_mlx5_* | test_efa* | test_cuda_*) ;;
		*) echo "$f" ;;
		esac
	done
}

# pyverbs_run DEV DIR: run the selection on DEV with its RoCEv2 IPv4 GID,
# print the counts to run.sh's output and unittest's report of each failure
# and error (with its traceback) here. Returns 0 when nothing failed or
# errored, 1 when something did, 2 when the suite did not finish.
pyverbs_run() {
	local dev=$1 dir=$2 gid rc=0 start summary
	gid=$(roce2_ipv4_gid "$dev") || { echo "$dev: no RoCEv2 IPv4 GID"; return 2; }
	# 2 MiB huge pages for the tests that want some (parent domains'
	# allocators, ODP): 32 MiB of the guest's memory, for both devices.
	echo 16 > /proc/sys/vm/nr_hugepages
	start=$SECONDS
	# shellcheck disable=SC2046
	(cd "$dir" && timeout 600 /usr/bin/python3 \
		"$SRDMA_ROOT/selftests/pyverbs/run.py" "$dir/tests" "$dir/results" \
		--dev "$dev" --gid "$gid" $(pyverbs_names "$dir")) > "$dir/log" 2>&1 ||
		rc=$?
	summary=$(grep "^pyverbs $dev: " "$dir/log")
	if [ -z "$summary" ]; then
		echo "$dev: the suite did not finish (status $rc):"
		tail -30 "$dir/log"
		return 2
	fi
	echo "# $summary in $((SECONDS - start)) s"
	awk '/^=====+$/ { p = 1 } /^Ran [0-9]+ tests? in/ { p = 0 }
	     p && !/^-----+$/' "$dir/log"
	[ $rc = 0 ] || return 1
}

pyverbs_present() {
	/usr/bin/python3 -c 'import pyverbs' 2>/dev/null &&
		[ -d /usr/share/doc/rdma-core/tests ]
}

test_pyverbs_srdma() {
	local dir=/tmp/pyverbs-srdma t why rc=0
	pyverbs_present || { echo "no pyverbs (python3-pyverbs)"; exit 4; }
	pyverbs_suite $dir || fail "unpack the suite"
	modprobe rdma_ucm || fail "modprobe rdma_ucm"
	setup_bound_veth || fail "link add"
	pyverbs_run srdma0 $dir || rc=$?
	# What skips, and why: how many tests for each reason.
	sed -n 's/^skip tests\.[^ ]* //p' $dir/results | sort | uniq -c |
		sort -rn | sed 's/^ */# skip /'
	for t in "${PYVERBS_SRDMA_MUST_PASS[@]}"; do
		why=$(grep "^skip tests\.$t\( \|$\)" $dir/results) &&
			fail "$t: ${why#"skip tests.$t "}"
	done
	[ $rc = 0 ] || fail "pyverbs on srdma0"
	pyverbs_compare $dir || fail "rdma_rxe passes a test srdma0 does not"
}

# For comparison only: fails only when the suite cannot run. Only with
# SRDMA_PYVERBS_RXE=1 (make check-pyverbs-rxe, which keeps the passes in
# selftests/pyverbs/rxe0-passes for make check to compare srdma0 with):
# a minute of make check for a list that changes with Debian's kernel only.
test_pyverbs_rxe() {
	local dir=/tmp/pyverbs-rxe rc=0
	[ "${SRDMA_PYVERBS_RXE:-0}" = 1 ] || {
		echo "rdma_rxe's run: make check-pyverbs-rxe"; exit 4; }
	pyverbs_present || { echo "no pyverbs (python3-pyverbs)"; exit 4; }
	modprobe rdma_rxe 2>/dev/null || { echo "no rdma_rxe"; exit 4; }
	pyverbs_suite $dir || fail "unpack the suite"
	modprobe rdma_ucm || fail "modprobe rdma_ucm"
	veth_setup || fail "veth"
	rdma link add rxe0 type rxe netdev v0 || fail "link add"
	pyverbs_run rxe0 $dir || rc=$?
	[ $rc != 2 ] || fail "pyverbs on rxe0"
	[ -d /out ] && pyverbs_passes $dir/results > /out/rxe0-passes
	# Before env_reset deletes v0: rdma_rxe 6.1 logs "ib_query_port failed"
	# when its netdev goes away under it.
	rdma link delete rxe0 || fail "link delete"
}
