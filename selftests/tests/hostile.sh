#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# A hostile peer (selftests/hostile.py) against one srdma QP: srdma0 on v0
# (10.0.0.1), the peer in netns ns1 (10.0.0.2) speaking RoCEv2 itself.
# Each test sends one adversarial sequence and asserts the QP's answers on
# the wire, its state and async events, its completions and its memory.
# srdma is loaded with max_mr=4 so that MR keys come back quickly.

hostile_setup() {
	[ ! -e /sys/module/srdma ] || rmmod srdma || return 1
	modprobe srdma max_mr=4 || return 1
	veth_netns_pair || return 1
	rdma link add srdma0 type srdma netdev v0 || return 1
	wait_for 5 ping -c 1 -W 1 10.0.0.2
}

# A test of the order the QP sends in. A veth hands each packet to the
# backlog of the CPU that sent it, and two CPUs' backlogs may be drained
# in either order: READ responses from the read work (a kworker) and then
# an ACK from softirq on the other CPU can reach the peer swapped. Steered
# to one CPU (RPS), v1 delivers in the order sent, as a wire does. Not for
# every test: one CPU's backlog (netdev_max_backlog, 1000 packets) then
# takes what the other sends, and thousands of READ responses may not fit.
hostile_in_order() {
	ip netns exec ns1 sh -c 'echo 1 > /sys/class/net/v1/queues/rx-0/rps_cpus'
}

# hostile TEST [SETUP]: run one hostile.py test against srdma0, after
# function SETUP if given.
hostile() {
	local g
	hostile_setup && ${2:-:} || fail "setup"
	g=$(roce2_ipv4_gid srdma0) || fail "no IPv4 GID"
	timeout 120 python3 "$SRDMA_ROOT/selftests/hostile.py" ns1 "$1" "$g" ||
		fail "hostile.py $1"
}

test_hostile_write_key_reuse() { hostile write_key_reuse; }
test_hostile_write_imm_no_recv() { hostile write_imm_no_recv; }
test_hostile_read_reset() { hostile read_reset; }
test_hostile_read_huge() { hostile read_huge; }
test_hostile_ack_behind_read() { hostile ack_behind_read hostile_in_order; }
test_hostile_dup_ack_before_read() { hostile dup_ack_before_read; }
test_hostile_middle_without_first() { hostile middle_without_first; }
test_hostile_psn_edges() { hostile psn_edges; }
test_hostile_bad_rkey() { hostile bad_rkey; }
test_hostile_dup_read_kills() { hostile dup_read_kills; }
test_hostile_dup_read_amplify() { hostile dup_read_amplify; }
test_hostile_send_stall() { hostile send_stall; }
test_hostile_nak_blame() { hostile nak_blame; }
test_hostile_dup_read_valid() { hostile dup_read_valid; }
test_hostile_read_budget() { hostile read_budget; }
test_hostile_odp_read_long() { hostile odp_read_long; }
test_hostile_dup_reads_fill() { hostile dup_reads_fill; }
test_hostile_dup_reads_fill_atomic() { hostile dup_reads_fill_atomic; }
test_hostile_dup_read_gone() { hostile dup_read_gone; }
test_hostile_nak_stale() { hostile nak_stale; }
test_hostile_dup_read_revoked() { hostile dup_read_revoked; }
test_hostile_atomic_replay() { hostile atomic_replay; }
test_hostile_atomic_write() { hostile atomic_write; }
test_hostile_atomic_write_len() { hostile atomic_write_len; }
test_hostile_uc_resync() { hostile uc_resync; }
test_hostile_rnr_wait() { hostile rnr_wait; }
test_hostile_rnr_hang() { hostile rnr_hang; }
test_hostile_ack_unsent() { hostile ack_unsent; }
test_hostile_credits_resp() { hostile credits_resp; }
test_hostile_credits_req() { hostile credits_req; }
test_hostile_credits_read() { hostile credits_read; }
test_hostile_read_zero_resend() { hostile read_zero_resend; }

# SEND with Invalidate from the wire to a user QP: never invalidates a
# user MR, and counts the refusal; a duplicate neither.
test_hostile_send_inv_user() {
	hostile send_inv_user
	[ "$(counter remote_invalidate_errors)" = 1 ] ||
		fail "remote_invalidate_errors $(counter remote_invalidate_errors)"
	[ "$(counter remote_invalidate)" = 0 ] || fail "an invalidation done"
}
test_hostile_send_inv_dup() {
	hostile send_inv_dup
	[ "$(counter remote_invalidate_errors)" = 0 ] &&
		[ "$(counter remote_invalidate)" = 0 ] || fail "a duplicate invalidated"
}

# XRC: requests land in the SRQ they name, a message cannot change SRQ,
# no SRQ (or one of no use) is an invalid request, and packets of the
# wrong transport are dropped both ways.
test_hostile_xrc_srqs() { hostile xrc_srqs; }
test_hostile_xrc_bad_srqn() { hostile xrc_bad_srqn; }
test_hostile_xrc_reset_held() { hostile xrc_reset_held; }
test_hostile_xrc_transport() { hostile xrc_transport; }
test_hostile_xrc_to_rc() { hostile xrc_to_rc; }
# Requests to a QP in RESET: dropped, counted as rx_bad_qp_state.
test_hostile_to_reset_qp() { hostile to_reset_qp; }
# An early timeout resends one packet; its ACK tells late from lost.
test_hostile_timeout_late() { hostile timeout_late; }
test_hostile_timeout_lost() { hostile timeout_lost; }
